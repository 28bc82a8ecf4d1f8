package hosttest

import (
	"io"
	"net/http"
	"strings"

	"github.com/moeproxy/moe/shared/testing/tb"
)

// Do sends req with http.DefaultClient. A 200 response is returned unread (for DecodeEcho)
// with body ""; any other response is read and closed, and its body returned.
func Do(t tb.TB, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	if resp.StatusCode == 200 {
		return resp, ""
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// Send is Do of a request with method, url, body ("" for none) and header key/value pairs.
func Send(t tb.TB, method, url, body string, hdr ...string) (*http.Response, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	return Do(t, req)
}

// Get is Send of a GET without body.
func Get(t tb.TB, url string, hdr ...string) (*http.Response, string) {
	t.Helper()
	return Send(t, http.MethodGet, url, "", hdr...)
}

// Fetch GETs url with client c and header key/value pairs (each set once) and returns status,
// response headers and the whole body. It reports errors with t.Errorf and returns status 0,
// so it can be used from goroutines.
func Fetch(t tb.TB, c *http.Client, url string, kv ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Error(err)
		return 0, nil, ""
	}
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return 0, nil, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}
