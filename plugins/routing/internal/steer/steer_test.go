package steer

import (
	"math"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func TestExp1IsFiniteAndExponential(t *testing.T) {
	for _, x := range []uint64{0, 1, math.MaxUint64, 1 << 63} {
		if v := Exp1(x); math.IsInf(v, 0) || math.IsNaN(v) || v < 0 {
			t.Fatalf("Exp1(%d) = %v", x, v)
		}
	}
	sum := 0.0
	const n = 100_000
	for i := uint64(0); i < n; i++ {
		sum += Exp1(Mix(i))
	}
	if mean := sum / n; mean < 0.98 || mean > 1.02 {
		t.Fatalf("mean of Exp1 = %v, want 1", mean)
	}
}

func TestSetRouteHeader(t *testing.T) {
	for _, tc := range []struct {
		name    string
		kv      []string
		value   string
		changed bool
		want    []string
	}{
		{"absent, set", nil, "a", true, []string{"a"}},
		{"same value", []string{"x-c", "a"}, "a", false, []string{"a"}},
		{"other value", []string{"x-c", "b"}, "a", true, []string{"a"}},
		{"repeated, one is right", []string{"x-c", "a", "x-c", "b"}, "a", true, []string{"a"}},
		{"remove", []string{"x-c", "b"}, "", true, nil},
		{"remove absent", nil, "", false, nil},
	} {
		h := fakeframework.NewRequest("GET", "/", tc.kv...)
		if got := SetRouteHeader(h, "x-c", tc.value); got != tc.changed {
			t.Errorf("%s: changed %v", tc.name, got)
		}
		if got := h.Values("x-c"); len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestNames(t *testing.T) {
	for _, ok := range []string{"RZ01", "v2", "canary-1", "a_b", strings.Repeat("a", 64)} {
		if CheckName("n", ok) != nil {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", "-a", "a b", "a/b", "a;b", "ünit", string(make([]byte, 65)), strings.Repeat("a", 65)} {
		if CheckName("n", bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if CheckClusterName("c", "rz 01") == nil || CheckClusterName("c", "") == nil || CheckClusterName("c", "outbound|80||svc.ns.svc.cluster.local") != nil {
		t.Error("cluster names")
	}
}
