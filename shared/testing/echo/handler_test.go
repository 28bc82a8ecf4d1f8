package echo

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(NewHandler("test"))
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestEchoDescribesTheRequest(t *testing.T) {
	srv := newServer(t)
	req, _ := http.NewRequest("POST", srv.URL+"/some/path?a=1&b=2", strings.NewReader("hello"))
	req.Host = "example.test"
	req.Header.Add("X-Multi", "1")
	req.Header.Add("X-Multi", "2")
	resp, body := do(t, req)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var e Echoed
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	if e.Method != "POST" || e.Path != "/some/path" || e.Query != "a=1&b=2" || e.Host != "example.test" ||
		e.Body != "hello" || e.BodyLen != 5 || strings.Join(e.Values("X-Multi"), ",") != "1,2" || e.URI != "/some/path?a=1&b=2" || e.Upstream != "test" || resp.Header.Get("x-upstream") != "test" || !strings.HasPrefix(e.Remote, "127.0.0.1:") {
		t.Fatalf("echo = %+v", e)
	}
}

func TestStatusPathAnswersThatCode(t *testing.T) {
	srv := newServer(t)
	cases := map[string]int{"/status/418": 418, "/status/503": 503, "/status/204": 204, "/status/abc": 400, "/status/99": 400}
	for path, want := range cases {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if resp, _ := do(t, req); resp.StatusCode != want {
			t.Errorf("%s: status %d, want %d", path, resp.StatusCode, want)
		}
	}
}

func TestDelayPathSleepsFirst(t *testing.T) {
	srv := newServer(t)
	req, _ := http.NewRequest("GET", srv.URL+"/delay/60", nil)
	start := time.Now()
	resp, body := do(t, req)
	if elapsed := time.Since(start); elapsed < 60*time.Millisecond {
		t.Fatalf("answered after %v", elapsed)
	}
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"path":"/delay/60"`) {
		t.Fatalf("status %d body %s", resp.StatusCode, body)
	}
}

func TestChunkedPathStreamsWithATrailer(t *testing.T) {
	srv := newServer(t)
	req, _ := http.NewRequest("GET", srv.URL+"/chunked", nil)
	resp, body := do(t, req)
	if len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Fatalf("transfer-encoding %v", resp.TransferEncoding)
	}
	if string(body) != "chunk 0\nchunk 1\nchunk 2\n" {
		t.Fatalf("body %q", body)
	}
	if got := resp.Trailer.Get("x-upstream-trailer"); got != "done" {
		t.Fatalf("trailer = %q (trailers %v)", got, resp.Trailer)
	}
}

func TestBytesPathReturnsNBytes(t *testing.T) {
	srv := newServer(t)
	for _, n := range []int{0, 1, 100000} {
		req, _ := http.NewRequest("GET", srv.URL+"/bytes/"+itoa(n), nil)
		resp, body := do(t, req)
		if resp.StatusCode != 200 || len(body) != n || resp.ContentLength != int64(n) {
			t.Fatalf("n=%d: status %d, %d bytes, content-length %d", n, resp.StatusCode, len(body), resp.ContentLength)
		}
	}
	req, _ := http.NewRequest("GET", srv.URL+"/bytes/-1", nil)
	if resp, _ := do(t, req); resp.StatusCode != 400 {
		t.Fatalf("negative n: status %d", resp.StatusCode)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
