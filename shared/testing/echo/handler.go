// Package echo is the one echo upstream of moe: the demo upstream behind `make run`
// (cmd/echo-upstream) and the upstream of every end-to-end test (hosttest starts it in
// process). Every request is answered with an Echoed JSON description of itself, and the
// response carries "x-upstream: <name>" so a test with several upstreams can tell where a
// request went. A few paths do more:
//
//	/status/<code>  answer with that status code (200..999)
//	/delay/<ms>     wait first (the wait ends when the client goes away)
//	/chunked        a chunked response ending with trailer x-upstream-trailer: done
//	/bytes/<n>      n bytes of body (a repeating alphabet, with content-length)
package echo

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Limits keep a misbehaving test from exhausting the machine.
const (
	maxRequestBody = 64 << 20
	maxBytes       = 256 << 20
	maxDelay       = 5 * time.Minute
)

// Echoed is what every echoed request is answered with: the request as the upstream saw it.
type Echoed struct {
	// Upstream is the name the upstream was started with.
	Upstream string `json:"upstream"`
	Method   string `json:"method"`
	// URI is the request target as received (path and query); Path and Query are its parts.
	URI   string `json:"uri"`
	Path  string `json:"path"`
	Query string `json:"query"`
	Host  string `json:"host"`
	// Headers and Trailers have lower-cased names; repeated fields keep every value in order.
	Headers  map[string][]string `json:"headers"`
	Body     string              `json:"body"`
	BodyLen  int                 `json:"body_len"`
	Trailers map[string][]string `json:"trailers,omitempty"`
	Remote   string              `json:"remote"`
}

// Header returns the first value of a request header the upstream received ("" if absent).
func (e Echoed) Header(name string) string {
	if v := e.Values(name); len(v) > 0 {
		return v[0]
	}
	return ""
}

// Values returns every value of a request header the upstream received.
func (e Echoed) Values(name string) []string { return e.Headers[strings.ToLower(name)] }

// Trailer returns the first value of a request trailer the upstream received.
func (e Echoed) Trailer(name string) string {
	if v := e.Trailers[strings.ToLower(name)]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// NewHandler returns the echo handler; name is reported in Echoed.Upstream and x-upstream.
func NewHandler(name string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/status/{code}", handleStatus)
	mux.HandleFunc("/delay/{ms}", handleDelay)
	mux.HandleFunc("/chunked", handleChunked)
	mux.HandleFunc("/bytes/{n}", handleBytes)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { writeEcho(w, r, http.StatusOK) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-upstream", name)
		mux.ServeHTTP(w, r)
	})
}

func handleStatus(w http.ResponseWriter, r *http.Request) {
	code, err := strconv.Atoi(r.PathValue("code"))
	if err != nil || code < 200 || code > 999 {
		http.Error(w, "status must be a final status code in [200, 999]", http.StatusBadRequest)
		return
	}
	writeEcho(w, r, code)
}

func handleDelay(w http.ResponseWriter, r *http.Request) {
	ms, err := strconv.Atoi(r.PathValue("ms"))
	d := time.Duration(ms) * time.Millisecond
	if err != nil || ms < 0 || d > maxDelay {
		http.Error(w, fmt.Sprintf("delay must be milliseconds in [0, %d]", maxDelay.Milliseconds()), http.StatusBadRequest)
		return
	}
	select {
	case <-time.After(d):
	case <-r.Context().Done():
		return // the client (or proxy) gave up; nobody is left to answer
	}
	writeEcho(w, r, http.StatusOK)
}

// handleChunked streams a few flushed chunks and ends with a trailer, so proxies' chunked and
// trailer handling can be tested.
func handleChunked(w http.ResponseWriter, r *http.Request) {
	if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxRequestBody)); err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	w.Header().Set("Trailer", "x-upstream-trailer")
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for i := range 3 {
		fmt.Fprintf(w, "chunk %d\n", i)
		if flusher != nil {
			flusher.Flush() // without a Content-Length, each flush is one chunk on the wire
		}
	}
	w.Header().Set("x-upstream-trailer", "done")
}

func handleBytes(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 0 || n > maxBytes {
		http.Error(w, fmt.Sprintf("n must be in [0, %d]", maxBytes), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(n))
	w.WriteHeader(http.StatusOK)
	// A repeating alphabet: easy to eyeball, and a truncation shows where it happened.
	const pattern = "abcdefghijklmnopqrstuvwxyz"
	buf := []byte(strings.Repeat(pattern, 32*1024/len(pattern)+1))
	for n > 0 {
		k := min(n, len(buf))
		if _, err := w.Write(buf[:k]); err != nil {
			return
		}
		n -= k
	}
}

func writeEcho(w http.ResponseWriter, r *http.Request, code int) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		http.Error(w, fmt.Sprintf("read body: %v", err), http.StatusRequestEntityTooLarge)
		return
	}
	e := Echoed{
		Upstream: w.Header().Get("x-upstream"),
		Method:   r.Method,
		URI:      r.RequestURI,
		Path:     r.URL.Path,
		Query:    r.URL.RawQuery,
		Host:     r.Host,
		Headers:  lower(r.Header),
		Body:     string(body),
		BodyLen:  len(body),
		Remote:   r.RemoteAddr,
	}
	if len(r.Trailer) > 0 {
		e.Trailers = lower(r.Trailer)
	}
	js, err := json.Marshal(e)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(js, '\n')) //nolint:errcheck // the client went away; nothing to do
}

func lower(h http.Header) map[string][]string {
	out := make(map[string][]string, len(h))
	for k, v := range h {
		lk := strings.ToLower(k)
		out[lk] = append(out[lk], v...)
	}
	return out
}
