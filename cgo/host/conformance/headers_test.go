package conformance

import (
	"strconv"
	"strings"
	"testing"
)

// request/response_headers_to_add/remove (source/common/router/header_parser.cc,
// config_impl.cc finalizeRequestHeaders / finalizeResponseHeaders, filter_manager.cc
// finalizeHeaders for local replies).
func TestHeaderMutations(t *testing.T) {
	findBinaries(t)
	a1 := startUpstream(t, "a1")
	h := startHost(t, hostSpec{tmpl: "headers", listeners: []string{"main", "specific"}, data: map[string]any{"A1": a1.Port}})

	t.Run("Request", func(t *testing.T) {
		r := h.must(t, req{listener: "main", path: "/h", headers: hdrs("x-test-id", "hdr-req", "x-in", "v1", "x-append", "orig",
			"x-absent", "orig", "x-drop", "gone", "x-append-legacy", "orig", "x-test-filterstate", "1")})
		if r.status != 200 {
			t.Fatalf("status %d %q", r.status, r.body)
		}
		e := decodeEcho(t, r)
		want := map[string][]string{
			// Route first, then virtual host, then route configuration: the last one wins.
			"x-level":         {"route_config"},
			"x-rc":            {"rc"},
			"x-client":        {"127.0.0.1"},
			"x-copy":          {"in=v1 missing= route=hdr_route"},
			"x-empty-kept":    {""},
			"x-append":        {"orig", "added"},
			"x-absent":        {"orig"},
			"x-absent-new":    {"added"},
			"x-append-legacy": {"appended"},
			"x-fs":            {"fs-value"},
			"x-legacy-state":  {"fs-value"},
			"x-attempt":       {"1"},
		}
		for k, v := range want {
			if got := e.Headers[k]; strings.Join(got, "|") != strings.Join(v, "|") {
				t.Errorf("upstream %s = %q, want %q", k, got, v)
			}
		}
		for _, k := range []string{"x-empty", "x-overwrite-if", "x-drop"} {
			if _, ok := e.Headers[k]; ok {
				t.Errorf("upstream got %s: %q", k, e.Headers[k])
			}
		}
	})

	t.Run("Response", func(t *testing.T) {
		r := h.must(t, req{listener: "main", path: "/h", headers: hdrs("x-echo-resp-marker", "m1", "x-echo-resp-x-remove-me", "x")})
		if r.status != 200 {
			t.Fatalf("status %d", r.status)
		}
		for k, v := range map[string]string{"x-resp-level": "route_config", "x-up-status": "200", "x-resp-copy": "m1",
			"x-up-host": "127.0.0.1:" + strconv.Itoa(a1.Port)} {
			if got := r.header.Values(k); len(got) != 1 || got[0] != v {
				t.Errorf("response %s = %q, want %q", k, got, v)
			}
		}
		if _, ok := r.header["X-Remove-Me"]; ok {
			t.Errorf("response_headers_to_remove: x-remove-me is still there")
		}
	})

	t.Run("LocalReplies", func(t *testing.T) {
		// Router local reply on a route entry: the route's response header lists apply.
		r := h.must(t, req{listener: "main", path: "/nocluster"})
		if r.status != 503 || r.get("x-local") != "cluster_not_found" || r.get("x-resp-level") != "route_config" {
			t.Errorf("cluster not found: %d x-local=%q x-resp-level=%q", r.status, r.get("x-local"), r.get("x-resp-level"))
		}
		// A direct response gets them through the router (DirectResponseEntry). The response code
		// is not in the stream info yet while a local reply's headers are made (Envoy records it
		// when the headers are encoded), so %RESPONSE_CODE% is 0 there, as in Envoy.
		r = h.must(t, req{listener: "main", path: "/direct"})
		if r.status != 200 || r.body != "direct" || r.get("x-direct") != "0" || r.get("x-resp-level") != "route_config" {
			t.Errorf("direct response: %d %q x-direct=%q x-resp-level=%q", r.status, r.body, r.get("x-direct"), r.get("x-resp-level"))
		}
		// Go's local reply on a route entry too.
		r = h.must(t, req{listener: "main", path: "/h", headers: hdrs("x-test-localreply", "decode-header")})
		if r.status != 403 || r.get("x-resp-level") != "route_config" || r.get("x-up-status") != "0" {
			t.Errorf("Go local reply: %d x-resp-level=%q x-up-status=%q", r.status, r.get("x-resp-level"), r.get("x-up-status"))
		}
	})

	t.Run("MostSpecificWins", func(t *testing.T) {
		r := h.must(t, req{listener: "specific", path: "/x"})
		if got := decodeEcho(t, r).Headers["x-level"]; len(got) != 1 || got[0] != "route" {
			t.Errorf("most_specific_header_mutations_wins: x-level %q, want route", got)
		}
	})
}
