package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A profile shaped like callgrind's: compressed names, a call whose inclusive cost must not
// count as the caller's, inlined code (fi=/fe=) that stays with its function, a recursion
// suffix, and objects of each kind.
const breakdownProfile = `version: 1
positions: line
events: Ir
summary: 4321

ob=(1) /w/out/libgolang.so
fl=(1) /usr/local/go/src/runtime/malloc.go
fn=(1) runtime.mallocgc
10 100
fl=(2) /w/shared/filtermanager/stream.go
fn=(2) github.com/moeproxy/moe/shared/filtermanager.newStream
20 30
cfl=(1)
cfn=(1)
calls=1 10
20 100
fi=(3) /w/shared/filtermanager/headers.go
30 5
fe=(2)
40 5
fn=(3) runtime.scanobject'2
0 200
fn=(4) github.com/envoyproxy/envoy/contrib/golang/filters/http/source/go/pkg/http.(*httpCApiImpl).HttpCopyHeaders
0 7
fn=(5) runtime.cgocallbackg1
0 9
ob=(2) /w/out/moe-host
fl=(4) /w/cgo/host/golang_filter.cc
fn=(6) moe::golang::Filter::decodeHeaders
0 1000
ob=(3) /usr/lib/x86_64-linux-gnu/libc.so.6
fl=(5) ./malloc/malloc.c
fn=(7) malloc
0 2000
ob=(1)
fl=(1)
fn=(1)
0 900
`

func TestSelfCostsAndCategories(t *testing.T) {
	costs, err := selfCosts(strings.NewReader(breakdownProfile))
	if err != nil {
		t.Fatal(err)
	}
	gos := goObjects(costs)
	got := map[string]int64{}
	for k, v := range costs {
		got[category(k, gos)] += v
	}
	want := map[string]int64{
		"go: allocation (runtime)":         1000, // 100 + 900 from the second block, not the call's 100
		"go: moe shared/filtermanager":     40,   // 30 + the inlined 5 + 5
		"go: GC (mark, sweep, finalizers)": 200,
		"go: Envoy Go SDK":                 7,
		"go: cgo crossing (runtime)":       9,
		"moe-host: golang_filter.cc":       1000,
		"lib: libc":                        2000,
	}
	if len(got) != len(want) {
		t.Errorf("categories %v, want %v", got, want)
	}
	for c, n := range want {
		if got[c] != n {
			t.Errorf("%s: %d, want %d", c, got[c], n)
		}
	}
	for name, in := range map[string]string{"no events": "fn=(1) f\n0 5\n", "bad cost": "events: Ir\nfn=(1) f\n0 x\n"} {
		if _, err := selfCosts(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestBreakdownTable(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.callgrind")
	b := filepath.Join(dir, "b.callgrind")
	if err := os.WriteFile(a, []byte("events: Ir\nob=(1) /x/libc.so.6\nfn=(1) malloc\n0 400\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(breakdownProfile), 0o644); err != nil {
		t.Fatal(err)
	}
	cats, per, totals, err := breakdown([]string{a, b}, []int{2, 10})
	if err != nil {
		t.Fatal(err)
	}
	md := breakdownMarkdown([]string{"B1", "B2"}, cats, per, totals)
	for _, line := range []string{
		"| self cost per request | B1 | B2 | B2 − B1 |",
		"| lib: libc | 200 | 200 | +0 |",
		"| moe-host: golang_filter.cc | 0 | 100 | +100 |",
		"| go: allocation (runtime) | 0 | 100 | +100 |",
		"| (rest, under 50 each) | 0 | 26 | +26 |",
		"| **total** | **200** | **426** | **+226** |",
	} {
		if !strings.Contains(md, line+"\n") {
			t.Errorf("table lacks %q:\n%s", line, md)
		}
	}
	// Sorted by the difference, largest first.
	if strings.Index(md, "golang_filter") > strings.Index(md, "libc") {
		t.Errorf("not sorted by difference:\n%s", md)
	}
}
