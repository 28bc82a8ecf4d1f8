package conformance

import (
	"strings"
	"testing"
)

// testHeaderInjection: a Go plugin that puts CR/LF/NUL into a header name or value (SetHeader,
// SetPath, SetTrailer) must not change the framing of what the host writes. Request headers:
// Envoy's HTTP/1 request encoder refuses them (checkValidRequestHeaders) and the router answers
// 503 with the error; nothing reaches the upstream. Response headers and trailers, request
// trailers: the entry is dropped instead of being written raw.
func testHeaderInjection(t *testing.T, e *env) {
	h := e.h
	for _, mode := range modes() {
		t.Run(mode, func(t *testing.T) {
			for _, which := range []string{"req-value", "req-key", "req-nul", "req-path"} {
				before := upstreamRequests(e)
				r := h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-mode", mode, "x-test-crlf", which)})
				if r.status != 503 || !strings.HasPrefix(r.body, "invalid header") {
					t.Errorf("%s: got %d %q, want 503 invalid header ...", which, r.status, r.body)
				}
				if n := upstreamRequests(e) - before; n != 0 {
					t.Errorf("%s: %d request(s) reached the upstream", which, n)
				}
			}

			// Response header name/value: read the raw bytes, so a split response cannot hide.
			for _, which := range []string{"resp-value", "resp-key", "resp-nul"} {
				rc := h.dial(t, "main")
				rc.write("GET /text?body=ok HTTP/1.1\r\nhost: test.com\r\nx-test-mode: " + mode + "\r\nx-test-crlf: " + which + "\r\n\r\n")
				res, body, err := rc.readResponse("GET")
				if err != nil {
					t.Fatalf("%s: reading the response: %v", which, err)
				}
				if res.StatusCode != 200 || body != "ok" || res.Header.Get("x-smuggled") != "" || res.Header.Get("x-inj") != "" {
					t.Errorf("%s: got %d %q headers %v", which, res.StatusCode, body, res.Header)
				}
				// the connection stays usable: framing intact
				rc.write("GET /text?body=again HTTP/1.1\r\nhost: test.com\r\n\r\n")
				res, body, err = rc.readResponse("GET")
				if err != nil || res.StatusCode != 200 || body != "again" {
					t.Errorf("%s: next request on the connection: %v %q", which, err, body)
				}
			}

			// Response trailers.
			for _, which := range []string{"resp-trailer-value", "resp-trailer-key"} {
				rc := h.dial(t, "main")
				rc.write("GET " + trailersPath("resp", 0) + " HTTP/1.1\r\nhost: test.com\r\nx-test-mode: " + mode + "\r\nx-test-crlf: " + which + "\r\n\r\n")
				res, body, err := rc.readResponse("GET")
				if err != nil {
					t.Fatalf("%s: reading the response: %v", which, err)
				}
				if res.StatusCode != 200 || body != "resp" || res.Trailer.Get("x-smuggled") != "" || res.Trailer.Get("x-trailer") != "bar" {
					t.Errorf("%s: got %d %q trailers %v", which, res.StatusCode, body, res.Trailer)
				}
			}

			// Request trailers.
			for _, which := range []string{"req-trailer-value", "req-trailer-key"} {
				r := h.must(t, req{listener: "main", method: "POST", path: "/echo", body: "req",
					trailers: map[string]string{"x-trailer": "foo"}, headers: hdrs("x-test-mode", mode, "x-test-crlf", which)})
				rep := decodeEcho(t, r)
				if rep.Body != "req" || len(rep.trailer("x-smuggled")) != 0 || strings.Join(rep.trailer("x-trailer"), ",") != "foo" {
					t.Errorf("%s: upstream saw body %q trailers %v", which, rep.Body, rep.Trailers)
				}
			}
		})
	}
}

func upstreamRequests(e *env) int64 {
	return e.a1.Requests.Load() + e.a2.Requests.Load() + e.b.Requests.Load()
}

// testHeaderNameChars: a request header name that is not an RFC 7230 token is a 400, as Envoy's
// codec answers (balsa / strict http_parser). The system http_parser is lenient: it takes
// "content-length : 5" as the Content-Length while the name the callbacks see is "content-length "
// (the host then forwarded it as a different header next to its own framing).
func testHeaderNameChars(t *testing.T, e *env) {
	h := e.h
	for _, name := range []string{"content-length ", "x foo", "x\x01y", "x(y)", "x@y", "x\xc3\xa9", "x\x7fy"} {
		rc := h.dial(t, "main")
		rc.write("POST /echo HTTP/1.1\r\nhost: test.com\r\n" + name + ": 5\r\n\r\nhello")
		res, body, err := rc.readResponse("POST")
		if err != nil {
			t.Errorf("%q: reading the response: %v", name, err)
			continue
		}
		if res.StatusCode != 400 {
			t.Errorf("%q: got %d %q, want 400", name, res.StatusCode, body)
		}
	}
	// Every other token character is a name byte (RFC 9110 tchar), upper case too.
	rc := h.dial(t, "main")
	rc.write("GET /echo HTTP/1.1\r\nhost: test.com\r\nX-09AZaz!#$%&'*+-.^_`|~: v\r\n\r\n")
	if res, body, err := rc.readResponse("GET"); err != nil || res.StatusCode != 200 {
		t.Errorf("a name of every token character: %v %v %q, want 200", err, res, body)
	}
	// Trailers too.
	rc = h.dial(t, "main")
	rc.write("POST /echo HTTP/1.1\r\nhost: test.com\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\nx y: 1\r\n\r\n")
	res, body, err := rc.readResponse("POST")
	if err != nil || res.StatusCode != 400 {
		t.Errorf("trailer name with a space: %v %v %q, want 400", err, res, body)
	}
}
