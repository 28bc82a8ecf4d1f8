package tb

import (
	"errors"
	"os"
	"strings"
	"testing"
)

var _ TB = (*testing.T)(nil)
var _ TB = (*testing.B)(nil)
var _ TB = (*Program)(nil)

func TestRunReportsFailuresAndRunsCleanupsLastFirst(t *testing.T) {
	var order []string
	var dir string
	err := Run(nil, func(t TB) {
		dir = t.TempDir()
		t.Cleanup(func() { order = append(order, "first") })
		t.Cleanup(func() { order = append(order, "second") })
		t.Errorf("bad %d", 1)
		t.Fatalf("fatal %s", "x")
		order = append(order, "not reached")
	})
	if err == nil || err.Error() != "bad 1\nfatal x" {
		t.Fatalf("err = %v", err)
	}
	if strings.Join(order, ",") != "second,first" {
		t.Errorf("order %v", order)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temp dir %s not removed: %v", dir, err)
	}
}

func TestRunSkipAndSuccess(t *testing.T) {
	if err := Run(nil, func(t TB) { t.Skip("no redis") }); !errors.Is(err, ErrSkipped) || !strings.Contains(err.Error(), "no redis") {
		t.Errorf("skip: %v", err)
	}
	if err := Run(nil, func(t TB) { t.Logf("fine") }); err != nil {
		t.Errorf("success: %v", err)
	}
}

func TestRunDoesNotSwallowOtherPanics(t *testing.T) {
	defer func() {
		if r := recover(); r != "boom" {
			t.Errorf("recovered %v, want boom", r)
		}
	}()
	_ = Run(nil, func(TB) { panic("boom") })
}
