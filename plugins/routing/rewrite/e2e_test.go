package rewrite_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/echo"
	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// rawGet sends a request target byte for byte (Go's client would clean "..")
// and returns the response.
func rawGet(t *testing.T, h *hosttest.Host, target string) *http.Response {
	t.Helper()
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", h.Port), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n", target)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(&byteReader{b: body})
	return resp
}

type byteReader struct{ b []byte }

func (r *byteReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

// The documented example through moe-host: which upstream served each request
// (the BeforeRoute rewrite re-routes /api/v1/ to the v1 cluster) and the
// request line and host it received.
func TestE2EExample(t *testing.T) {
	v1 := echo.Start(t, "v1")
	h := hosttest.StartExample(t, "envoy/examples/rewrite.yaml", hosttest.ExampleOptions{Replace: map[string]string{
		"port_value: 9002": "port_value: " + strconv.Itoa(v1.Port),
	}})
	for _, tc := range []struct {
		target, upstream, uri, host, orig string
		status                            int
	}{
		{"/api/v1/items?debug=1&a=b", "v1", "/v1/items?a=b&source=gateway", "example.com", "/api/v1/items?debug=1&a=b", 200},
		{"/api/v1/a/./b/%7Euser/%2e%2e/c", "v1", "/v1/a/b/c?source=gateway", "example.com", "/api/v1/a/./b/%7Euser/%2e%2e/c", 200},
		{"/api/v1/../../admin", "upstream", "/admin?source=gateway", "example.com", "/api/v1/../../admin", 200},
		{"/api/v1/a%2Fb", "v1", "/v1/a%2Fb?source=gateway", "example.com", "/api/v1/a%2Fb", 200},
		{"/api/v1/%zz", "", "", "", "", 400},
		{"/users/42/orders", "upstream", "/orders/by-user/42?via=users", "orders.internal", "/users/42/orders", 200},
		{"/users/42/profile?x=1", "upstream", "/users/42/profile?x=1&via=users", "orders.internal", "/users/42/profile?x=1", 200},
		{"/other?debug=1", "upstream", "/other?debug=1", "example.com", "", 200},
	} {
		t.Run(tc.target, func(t *testing.T) {
			resp := rawGet(t, h, tc.target)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.status != 200 {
				return
			}
			e := hosttest.DecodeEcho(t, resp)
			if e.Upstream != tc.upstream || e.URI != tc.uri || e.Host != tc.host || e.Header("x-envoy-original-path") != tc.orig {
				t.Errorf("%s got uri %q host %q original %q; want %s %q %q %q", e.Upstream, e.URI, e.Host, e.Header("x-envoy-original-path"), tc.upstream, tc.uri, tc.host, tc.orig)
			}
		})
	}
	for name, want := range map[string]int64{
		"moe_rewrite_rewritten":       6,
		"moe_rewrite_path_rewritten":  4,
		"moe_rewrite_path_normalized": 2,
		"moe_rewrite_invalid_path":    1,
		"moe_rewrite_host_rewritten":  2,
		"moe_rewrite_not_matched":     1,
	} {
		if got := h.Counter(t, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}
