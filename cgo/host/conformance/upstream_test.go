package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// upstream is an in-process HTTP/1.1 server on 127.0.0.1:0 that the host proxies to.
//
// Endpoints (any method):
//
//	/status/N            status N, body "status N" (no body for 204/304; ?empty=1: no body)
//	/text?body=S         200 with body S (content-length)
//	/chunks?n=N&size=S&delay=MS   N chunks of S bytes each, flushed, MS apart (chunked)
//	/trailers?body=S&delay=MS   chunked body S, (after MS) trailers x-trailer: bar, x-resp-trailer-1: baz
//	/slow?ms=N           sleep N ms (bounded) then echo
//	/large?bytes=N       N bytes of a repeating pattern (content-length)
//	anything else        echo: JSON {upstream, method, path, host, headers, body, trailers}
//
// Every response carries "x-upstream: <name>". A request header "x-echo-resp-<h>: v" becomes the
// response header "<h>: v".
type upstream struct {
	name     string
	ln       net.Listener
	srv      *http.Server
	requests atomic.Int64
}

type echoReply struct {
	Upstream string              `json:"upstream"`
	Method   string              `json:"method"`
	Path     string              `json:"path"`
	Host     string              `json:"host"`
	Headers  map[string][]string `json:"headers"`
	Body     string              `json:"body"`
	Trailers map[string][]string `json:"trailers"`
}

func (e *echoReply) header(k string) string {
	for hk, v := range e.Headers {
		if strings.EqualFold(hk, k) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

func (e *echoReply) headerValues(k string) []string {
	for hk, v := range e.Headers {
		if strings.EqualFold(hk, k) {
			return v
		}
	}
	return nil
}

func (e *echoReply) trailer(k string) []string {
	for hk, v := range e.Trailers {
		if strings.EqualFold(hk, k) {
			return v
		}
	}
	return nil
}

func startUpstream(t testing.TB, name string) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("upstream %s: %v", name, err)
	}
	u := &upstream{name: name, ln: ln}
	u.srv = &http.Server{Handler: http.HandlerFunc(u.serve), ReadHeaderTimeout: 10 * time.Second}
	go u.srv.Serve(ln)
	t.Cleanup(func() { u.srv.Close() })
	return u
}

func (u *upstream) port() int { return u.ln.Addr().(*net.TCPAddr).Port }

func boundedInt(s string, def, max int) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return def
	}
	if n > max {
		return max
	}
	return n
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	u.requests.Add(1)
	w.Header().Set("x-upstream", u.name)
	for k, v := range r.Header {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-echo-resp-") && len(v) > 0 {
			w.Header().Set(strings.TrimPrefix(lk, "x-echo-resp-"), v[0])
		}
	}
	q := r.URL.Query()
	switch {
	case strings.HasPrefix(r.URL.Path, "/status/"):
		io.Copy(io.Discard, r.Body)
		code := boundedInt(strings.TrimPrefix(r.URL.Path, "/status/"), 200, 599)
		if code < 100 {
			code = 200
		}
		if code == 204 || code == 304 || q.Get("empty") == "1" {
			if code != 204 && code != 304 {
				w.Header().Set("content-length", "0")
			}
			w.WriteHeader(code)
			return
		}
		body := fmt.Sprintf("status %d", code)
		w.Header().Set("content-length", strconv.Itoa(len(body)))
		w.WriteHeader(code)
		io.WriteString(w, body)
	case r.URL.Path == "/text":
		io.Copy(io.Discard, r.Body)
		body := q.Get("body")
		w.Header().Set("content-length", strconv.Itoa(len(body)))
		io.WriteString(w, body)
	case r.URL.Path == "/chunks":
		io.Copy(io.Discard, r.Body)
		n := boundedInt(q.Get("n"), 3, 100)
		size := boundedInt(q.Get("size"), 4, 1<<20)
		delay := boundedInt(q.Get("delay"), 0, 2000)
		fl, _ := w.(http.Flusher)
		w.WriteHeader(200)
		for i := 0; i < n; i++ {
			w.Write([]byte(strings.Repeat(string(rune('a'+i%26)), size)))
			if fl != nil {
				fl.Flush()
			}
			if delay > 0 && i < n-1 {
				time.Sleep(time.Duration(delay) * time.Millisecond)
			}
		}
	case r.URL.Path == "/trailers":
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Trailer", "x-trailer, x-resp-trailer-1")
		w.WriteHeader(200)
		if b := q.Get("body"); b != "" {
			io.WriteString(w, b)
		}
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		if d := boundedInt(q.Get("delay"), 0, 2000); d > 0 {
			time.Sleep(time.Duration(d) * time.Millisecond)
		}
		w.Header().Set("x-trailer", "bar")
		w.Header().Set("x-resp-trailer-1", "baz")
	case r.URL.Path == "/large":
		io.Copy(io.Discard, r.Body)
		n := boundedInt(q.Get("bytes"), 1024, 64<<20)
		w.Header().Set("content-length", strconv.Itoa(n))
		w.WriteHeader(200)
		w.Write(pattern(n))
	default:
		if r.URL.Path == "/slow" {
			time.Sleep(time.Duration(boundedInt(q.Get("ms"), 100, 5000)) * time.Millisecond)
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, "read body: "+err.Error(), 400)
			return
		}
		rep := echoReply{Upstream: u.name, Method: r.Method, Path: r.URL.RequestURI(), Host: r.Host,
			Headers: map[string][]string{}, Body: string(body), Trailers: map[string][]string{}}
		for k, v := range r.Header {
			rep.Headers[strings.ToLower(k)] = v
		}
		for k, v := range r.Trailer {
			rep.Trailers[strings.ToLower(k)] = v
		}
		out, _ := json.Marshal(rep)
		w.Header().Set("content-type", "application/json")
		w.Header().Set("content-length", strconv.Itoa(len(out)))
		w.Write(out)
	}
}

var (
	patternOnce sync.Once
	patternBuf  []byte
)

// pattern returns n bytes of a fixed, position-dependent pattern.
func pattern(n int) []byte {
	patternOnce.Do(func() {
		const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		patternBuf = make([]byte, 1<<20)
		for i := range patternBuf {
			patternBuf[i] = alphabet[(i*7+i/len(alphabet))%len(alphabet)]
		}
	})
	out := make([]byte, 0, n)
	for len(out) < n {
		k := n - len(out)
		if k > len(patternBuf) {
			k = len(patternBuf)
		}
		out = append(out, patternBuf[:k]...)
	}
	return out
}

func sortedKeys(m map[string]int64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func parseEcho(body string) (*echoReply, error) {
	var rep echoReply
	err := json.Unmarshal([]byte(body), &rep)
	return &rep, err
}

func ioCopy(w io.Writer, res *http.Response) (int64, error) {
	defer res.Body.Close()
	return io.Copy(w, res.Body)
}
