// Package steer holds what the routing plugins (canary, ldc-route) share: how
// they steer a request on Envoy (a request header the route's cluster_header
// reads, then a route-cache clear so Envoy matches again), the stable hash
// they choose by, the names of their targets and how they notice that Envoy
// had no cluster of the chosen name.
package steer

import (
	"math"
	"regexp"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/moeproxy/moe/shared/api"
)

// nameRE is what a target or unit name may be: it becomes part of a metric
// name, a cookie value and a header value, so it stays within characters that
// need no escaping in any of them. The length is checked apart (maxNameLen):
// a bounded repetition ({0,63}) compiles to 64 copies of the class, ~26 KB
// that every GC cycle of the library would mark again.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

const maxNameLen = 64

// CheckName checks a target or unit name.
func CheckName(field, name string) error {
	if len(name) > maxNameLen || !nameRE.MatchString(name) {
		return api.FieldErrorf(field, "must be 1-64 letters, digits, '-' or '_' (starting with a letter or digit), got %q", name)
	}
	return nil
}

// MetricSuffix is the name as a metric name part ('-' becomes '_', as in
// plugin names). Two names with the same suffix are a config error (see
// CheckNames).
func MetricSuffix(name string) string { return strings.ReplaceAll(name, "-", "_") }

// CheckClusterName checks a cluster name written into a request header: a
// header value Envoy accepts, not empty.
func CheckClusterName(field, name string) error {
	if name == "" {
		return api.FieldErrorf(field, "is required")
	}
	if len(name) > 256 {
		return api.FieldErrorf(field, "must be at most 256 bytes")
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c == 0x7f {
			return api.FieldErrorf(field, "must not contain spaces or control characters, got %q", name)
		}
	}
	return nil
}

// Hash is the stable 64-bit hash of a key (xxHash64, seed 0): the same in every
// process and on every machine, so every Envoy of a fleet sends a user to the
// same place.
func Hash(s string) uint64 { return xxhash.Sum64String(s) }

// Mix is the 64-bit finaliser of MurmurHash3: a bijection with full avalanche,
// used to derive independent per-target values from one key hash.
func Mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// Exp1 maps a uniform 64-bit value to an Exp(1) variate, -ln(u) with u in
// (0, 1). Weighted rendezvous hashing picks the target with the smallest
// Exp1(Mix(key ^ seed)) / weight: each target wins with probability
// weight / sum, and changing one target's weight moves only keys to or from
// that target.
func Exp1(x uint64) float64 {
	u := (float64(x>>11) + 0.5) * (1.0 / (1 << 53))
	return -math.Log(u)
}

// SetRouteHeader makes request header name hold value ("" removes it). It
// reports whether the header changed, that is whether Envoy must match the
// route again. A value the client sent is always replaced or removed, so a
// client cannot pick a cluster by sending the header itself.
func SetRouteHeader(h api.RequestHeaderMap, name, value string) bool {
	vs := h.Values(name)
	if value == "" {
		if len(vs) == 0 {
			return false
		}
		_ = h.Del(name)
		return true
	}
	if len(vs) == 1 && vs[0] == value {
		return false
	}
	_ = h.Set(name, value)
	return true
}

// ClusterNotFound reports whether a response is Envoy's answer for a route
// whose cluster does not exist: 503 with response code details
// "cluster_not_found" (router.cc; response flag NC). Only a 503 costs the
// property read.
func ClusterNotFound(ctx api.Context, h api.ResponseHeaderMap) bool {
	if h.Status() != 503 {
		return false
	}
	d, err := ctx.Sender().RequestInfo().GetProperty("response.code_details")
	return err == nil && d == "cluster_not_found"
}
