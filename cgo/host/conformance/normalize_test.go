package conformance

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

var normalizeListeners = []string{"norm", "redirect", "reject", "main"}

// Request targets are normalised before the route is chosen and before any filter runs
// (conn_manager_impl.cc:1494-1530): the route, the Go filter and the upstream all see the
// normalised path, and a refused one never reaches a filter. Raw requests: Go's client would
// clean the paths itself.
func TestRequestTargetIsNormalisedBeforeRouting(t *testing.T) {
	findBinaries(t)
	a1 := startUpstream(t, "a1")
	h := startHost(t, hostSpec{tmpl: "normalize", listeners: normalizeListeners, data: map[string]any{"A1": a1.Port}})
	cases := []struct {
		name, listener, target, host string
		extra                        string // more request header lines
		grpcStatus                   string // a refused gRPC request: 200 with this grpc-status
		status                       int
		// upstream: the request target the upstream received ("": not sent upstream);
		// goPath/goHost: what the Go filter saw; config: the (merged) golang config, naming
		// the route; location: a redirect's Location.
		upstream, goPath, goHost, config, location string
	}{
		{name: "dot segments escape a prefix", listener: "norm", target: "/public/../admin/x", status: 200,
			upstream: "/admin/x", goPath: "/admin/x", config: "norm>admin"},
		{name: "escaped dots and backslashes", listener: "norm", target: "/public/%2e%2E\\admin", status: 200,
			upstream: "/admin", goPath: "/admin", config: "norm>admin"},
		{name: "escaped slash unescaped then canonical", listener: "norm", target: "/public%2F..%2Fadmin?q=%2F..", status: 200,
			upstream: "/admin?q=%2F..", goPath: "/admin?q=%2F..", config: "norm>admin"},
		{name: "slashes merged", listener: "norm", target: "//admin///y/", status: 200,
			upstream: "/admin/y/", goPath: "/admin/y/", config: "norm>admin"},
		{name: "unreserved decoded, others escaped", listener: "norm", target: "/%61dmin/%7e%20{", status: 200,
			upstream: "/admin/~%20%7B", goPath: "/admin/~%20%7B", config: "norm>admin"},
		{name: "host port and trailing dot stripped", listener: "norm", target: "/p", host: "example.com.:8080", status: 200,
			upstream: "/p", goPath: "/p", goHost: "example.com", config: "norm"},
		{name: "escaped NUL refused", listener: "norm", target: "/a%00b", status: 400},
		{name: "fragment refused", listener: "main", target: "/a#b", status: 400},
		// (Only the Go filter's view: the echo upstream, a Go ServeMux, redirects such paths.)
		{name: "defaults keep the path", listener: "main", target: "/a/../b//c%2Fd", status: 200,
			goPath: "/a/../b//c%2Fd"},
		{name: "escaped slash redirected", listener: "redirect", target: "/a%2fb?x=1", status: 307, location: "/a/b?x=1"},
		// The refusal is a local reply, which a gRPC request gets as 200 with grpc-status 13
		// (INTERNAL, Envoy's mapping of 400), like any local reply (request headers are
		// initialised before normalisation, conn_manager_impl.cc:1367).
		{name: "gRPC is refused, not redirected", listener: "redirect", target: "/a%2fb", extra: "content-type: application/grpc\r\n",
			status: 400, grpcStatus: "13"},
		{name: "no escaped slash, no redirect", listener: "redirect", target: "/a/b", status: 200,
			upstream: "/a/b", goPath: "/a/b", config: "redirect"},
		{name: "escaped slash refused", listener: "reject", target: "/a%5Cb", status: 400},
		{name: "only the listener's port stripped", listener: "reject", target: "/p", host: "h:1", status: 200,
			upstream: "/p", goPath: "/p", goHost: "h:1", config: "reject"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			host := tc.host
			if host == "" {
				host = "test.com"
			}
			id := fmt.Sprintf("norm-%d", i)
			send := func(extra string) (int, string, string) {
				t.Helper()
				rc := h.dial(t, tc.listener)
				rc.write("GET " + tc.target + " HTTP/1.1\r\nHost: " + host + "\r\nx-test-id: " + id + "\r\n" + tc.extra + extra + "\r\n")
				res, body, err := rc.readResponse("GET")
				if err != nil {
					t.Fatalf("%s: %v", tc.target, err)
				}
				if tc.grpcStatus != "" {
					if g := res.Header.Get("grpc-status"); res.StatusCode != 200 || g != tc.grpcStatus {
						t.Errorf("gRPC reply: status %d grpc-status %q, want 200 and %s", res.StatusCode, g, tc.grpcStatus)
					}
					return tc.status, body, "|" // checked here
				}
				return res.StatusCode, body, res.Header.Get("location") + "|" + res.Header.Get("x-conf-name")
			}
			if tc.upstream != "" || tc.status != 200 {
				sendUpstream(t, send, tc.status, tc.upstream, tc.config, tc.location)
			}
			if tc.status != 200 {
				if ev := h.events(t, id); len(ev) != 0 {
					t.Errorf("a refused request reached the Go filter: %q", ev)
				}
				return
			}
			status, dump, _ := send("x-test-dump-headers: 1\r\n")
			if status != 200 {
				t.Fatalf("dump: status %d (%s)", status, dump)
			}
			var seen map[string][]string
			if err := json.Unmarshal([]byte(dump), &seen); err != nil {
				t.Fatalf("dump %q: %v", dump, err)
			}
			wantHost := tc.goHost
			if wantHost == "" {
				wantHost = host
				if tc.listener == "norm" {
					wantHost = strings.TrimSuffix(host, ".")
				}
			}
			if p := seen[":path"]; len(p) != 1 || p[0] != tc.goPath {
				t.Errorf("Go saw :path %q, want %q", p, tc.goPath)
			}
			if a := seen[":authority"]; len(a) != 1 || a[0] != wantHost {
				t.Errorf("Go saw :authority %q, want %q", a, wantHost)
			}
		})
	}
	st := h.stats(t)
	for name, want := range map[string]int64{
		"http.norm.downstream_rq_failed_path_normalization":           1,
		"http.main.downstream_rq_failed_path_normalization":           1,
		"http.reject.downstream_rq_failed_path_normalization":         1,
		"http.redirect.downstream_rq_redirected_with_normalized_path": 1,
		"http.redirect.downstream_rq_failed_path_normalization":       1,
	} {
		if st[name] != want {
			t.Errorf("%s = %d, want %d", name, st[name], want)
		}
	}
}

// sendUpstream checks a request sent with x-test-conf-name: its status, and for a 200 the
// target the echo upstream received and the config (route) that served it.
func sendUpstream(t *testing.T, send func(extra string) (int, string, string), status int, upstream, config, location string) {
	t.Helper()
	got, body, hdrs := send("x-test-conf-name: 1\r\n")
	gotLocation, gotConfig, _ := strings.Cut(hdrs, "|")
	if got != status {
		t.Fatalf("status %d, want %d (%s)", got, status, body)
	}
	if gotLocation != location {
		t.Errorf("location %q, want %q", gotLocation, location)
	}
	if status != 200 {
		return
	}
	rep, err := parseEcho(body)
	if err != nil || rep.URI != upstream {
		t.Errorf("upstream got %q (%v), want %q", rep.URI, err, upstream)
	}
	if gotConfig != config {
		t.Errorf("config %q, want %q (the route chosen on the normalised path)", gotConfig, config)
	}
}
