package echo

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/tb"
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

func TestEchoHasContentLengthAndFraming(t *testing.T) {
	srv := newServer(t)
	req, _ := http.NewRequest("POST", srv.URL+"/x", io.MultiReader(strings.NewReader("abc"))) // hides the length: chunked
	req.Header.Set(RespHeaderPrefix+"x-answer", "42")
	resp, body := do(t, req)
	var e Echoed
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatal(err)
	}
	if resp.ContentLength != int64(len(body)) || e.Body != "abc" || len(e.TransferEncoding) != 1 || e.TransferEncoding[0] != "chunked" {
		t.Fatalf("content-length %d (body %d), echo %+v", resp.ContentLength, len(body), e)
	}
	if resp.Header.Get("x-answer") != "42" {
		t.Fatalf("x-echo-resp-x-answer not answered: %v", resp.Header)
	}
}

func TestBodyAndChunkedParameters(t *testing.T) {
	srv := newServer(t)
	req, _ := http.NewRequest("GET", srv.URL+"/anything?body=hi", nil)
	resp, body := do(t, req)
	if string(body) != "hi" || resp.ContentLength != 2 || resp.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("?body=: %q cl=%d %v", body, resp.ContentLength, resp.Header)
	}
	req, _ = http.NewRequest("GET", srv.URL+"/status/201?body=", nil)
	if resp, body = do(t, req); resp.StatusCode != 201 || len(body) != 0 || resp.ContentLength != 0 {
		t.Fatalf("?body= on /status: %d %q cl=%d", resp.StatusCode, body, resp.ContentLength)
	}
	req, _ = http.NewRequest("GET", srv.URL+"/x?chunked=1", nil)
	resp, body = do(t, req)
	var e Echoed
	if len(resp.TransferEncoding) != 1 || json.Unmarshal(body, &e) != nil || e.URI != "/x?chunked=1" {
		t.Fatalf("?chunked=1: te %v body %q", resp.TransferEncoding, body)
	}
	req, _ = http.NewRequest("GET", srv.URL+"/status/204", nil)
	if resp, body = do(t, req); resp.StatusCode != 204 || len(body) != 0 || resp.Header.Get("Content-Type") != "" {
		t.Fatalf("204: %q %v", body, resp.Header)
	}
}

func TestChunkedParameters(t *testing.T) {
	srv := newServer(t)
	req, _ := http.NewRequest("GET", srv.URL+"/chunked?n=3&size=2&delay=5", nil)
	resp, body := do(t, req)
	if string(body) != "aabbcc" || len(resp.Trailer) != 0 {
		t.Fatalf("n/size: %q trailers %v", body, resp.Trailer)
	}
	req, _ = http.NewRequest("GET", srv.URL+"/chunked?body=hello&trailer=x-a:1&trailer=x-b:2", nil)
	resp, body = do(t, req)
	if string(body) != "hello" || resp.Trailer.Get("x-a") != "1" || resp.Trailer.Get("x-b") != "2" {
		t.Fatalf("body/trailer: %q trailers %v", body, resp.Trailer)
	}
	req, _ = http.NewRequest("GET", srv.URL+"/chunked?body=&trailer=x-a:1", nil)
	if resp, body = do(t, req); len(body) != 0 || resp.Trailer.Get("x-a") != "1" {
		t.Fatalf("empty body: %q trailers %v", body, resp.Trailer)
	}
	req, _ = http.NewRequest("GET", srv.URL+"/chunked?trailer=nocolon", nil)
	if resp, _ = do(t, req); resp.StatusCode != 400 {
		t.Fatalf("bad trailer: %d", resp.StatusCode)
	}
}

func TestMirrorAndPattern(t *testing.T) {
	srv := newServer(t)
	payload := Pattern(300 << 10)
	for _, q := range []string{"", "?chunked=1"} {
		req, _ := http.NewRequest("POST", srv.URL+"/mirror"+q, bytes.NewReader(payload))
		resp, body := do(t, req)
		if !bytes.Equal(body, payload) || (q == "" && resp.ContentLength != int64(len(payload))) || (q != "" && resp.ContentLength != -1) {
			t.Fatalf("mirror%s: %d bytes, equal %v, content-length %d", q, len(body), bytes.Equal(body, payload), resp.ContentLength)
		}
	}
	req, _ := http.NewRequest("GET", srv.URL+"/bytes/"+itoa(len(payload)), nil)
	if _, body := do(t, req); !bytes.Equal(body, payload) {
		t.Fatalf("/bytes is not Pattern")
	}
	if p := Pattern(2 << 20); bytes.Equal(p[:1<<19], p[1<<19:1<<20]) || !bytes.Equal(p[:1<<20], p[1<<20:]) {
		t.Fatalf("Pattern: want a 1 MiB period with no shorter one")
	}
}

func TestServerCountsAbandonedDelays(t *testing.T) {
	s := Start(t, "abandon")
	c := &http.Client{Timeout: 50 * time.Millisecond}
	if resp, err := c.Get(s.URL + "/delay/5000"); err == nil {
		resp.Body.Close()
		t.Fatalf("answered before the delay")
	}
	if !tb.Poll(3*time.Second, func() bool { return s.Abandoned.Load() == 1 }) {
		t.Fatalf("Abandoned = %d, want 1", s.Abandoned.Load())
	}
}
