package main

import (
	"sort"
	"strings"
)

// Crossings of the C/Go boundary, counted by moe-host on admin /stats: moe_host.capi.<name>
// for each C function Go called (cgo/host/capi.cc) and moe_host.go.<name> for each Go entry
// point the host called (cgo/host/go_calls.h).
var crossingPrefixes = []string{"moe_host.capi.", "moe_host.go."}

func isCrossing(name string) bool {
	for _, p := range crossingPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// crossingsPerRequest is (after - before) / n for every crossing counter that moved.
func crossingsPerRequest(before, after map[string]int64, n int) map[string]float64 {
	out := map[string]float64{}
	if n <= 0 {
		return out
	}
	for k, v := range after {
		if !isCrossing(k) {
			continue
		}
		if d := v - before[k]; d != 0 {
			out[k] = float64(d) / float64(n)
		}
	}
	return out
}

func totalCrossings(m map[string]float64) float64 {
	var t float64
	for _, v := range m {
		t += v
	}
	return t
}

// namedValue is a counter and its value per request.
type namedValue struct {
	Name  string  `json:"name"`
	Value float64 `json:"per_request"`
}

// topCrossings returns the n largest, largest first (ties by name), names without the
// moe_host. prefix.
func topCrossings(m map[string]float64, n int) []namedValue {
	var all []namedValue
	for k, v := range m {
		all = append(all, namedValue{strings.TrimPrefix(k, "moe_host."), v})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Value != all[j].Value {
			return all[i].Value > all[j].Value
		}
		return all[i].Name < all[j].Name
	})
	if len(all) > n {
		all = all[:n]
	}
	return all
}
