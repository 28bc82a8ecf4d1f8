// Package echo is the one echo upstream of moe: the demo upstream behind `make run`
// (cmd/echo-upstream) and the upstream of every end-to-end test (hosttest starts it in
// process, and so do moe-host's conformance and network suites). Every request is answered
// with an Echoed JSON description of itself (with content-length), and the response carries
// "x-upstream: <name>" so a test with several upstreams can tell where a request went.
//
// Paths that do more:
//
//	/status/<code>  answer with that status code (200..999); no body for 204 and 304
//	/delay/<ms>     wait first (the wait ends when the client goes away; Server.Abandoned
//	                counts those)
//	/chunked        a chunked response, each chunk flushed: without parameters three lines and
//	                the trailer x-upstream-trailer: done. Any parameter replaces that: n and
//	                size (n chunks of size bytes, "aaa…", "bbb…"; defaults 3 and 4), or body
//	                (that text as one chunk, possibly empty); trailer=name:value, repeatable
//	                (no trailers unless given); delay=<ms> between chunks and before the trailers
//	/bytes/<n>      n bytes of Pattern(n), with content-length
//	/mirror         the request body itself, byte for byte (application/octet-stream)
//	/ws             a websocket echo (websocket.go): each message back as sent;
//	                ?close_after=N closes (1000 "bye") after N messages; Server.WebSocketClosed
//	                counts the websocket connections that ended
//	/upgrade        a generic upgrade (upgrade.go): 101 with the request's Upgrade, then every
//	                byte back raw; ?early=1 reports bytes sent before the 101 (x-echo-early)
//
// Everywhere but /chunked and /bytes:
//
//	?body=S         answer with S (text/plain) instead of the Echoed JSON; ?body= is empty
//	?chunked=1      send the answer chunked (headers flushed first, no content-length)
//
// And on every path a request header "x-echo-resp-<name>: v" becomes the response header
// "<name>: v".
package echo

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Limits keep a misbehaving test from exhausting the machine.
const (
	maxRequestBody = 64 << 20
	maxBytes       = 256 << 20
	maxDelay       = 5 * time.Minute
	maxChunks      = 1000
	maxChunkSize   = 1 << 20
)

// RespHeaderPrefix: a request header "x-echo-resp-<name>: v" is answered with "<name>: v".
const RespHeaderPrefix = "x-echo-resp-"

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
	Headers map[string][]string `json:"headers"`
	// TransferEncoding is the request's framing as received ("chunked"; empty for a
	// content-length or bodiless request).
	TransferEncoding []string            `json:"transfer_encoding,omitempty"`
	Body             string              `json:"body"`
	BodyLen          int                 `json:"body_len"`
	Trailers         map[string][]string `json:"trailers,omitempty"`
	Remote           string              `json:"remote"`
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
	if v := e.TrailerValues(name); len(v) > 0 {
		return v[0]
	}
	return ""
}

// TrailerValues returns every value of a request trailer the upstream received.
func (e Echoed) TrailerValues(name string) []string { return e.Trailers[strings.ToLower(name)] }

// NewHandler returns the echo handler; name is reported in Echoed.Upstream and x-upstream.
func NewHandler(name string) http.Handler { return newHandler(name, nil, nil) }

// newHandler is NewHandler counting abandoned delays in abandoned (may be nil).
func newHandler(name string, abandoned, wsClosed *atomic.Int64) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/status/{code}", handleStatus)
	mux.HandleFunc("/delay/{ms}", func(w http.ResponseWriter, r *http.Request) { handleDelay(w, r, abandoned) })
	mux.HandleFunc("/chunked", handleChunked)
	mux.HandleFunc("/bytes/{n}", handleBytes)
	mux.HandleFunc("/mirror", handleMirror)
	mux.HandleFunc("/upgrade", handleUpgrade)
	mux.HandleFunc("/ws", func(w http.ResponseWriter, r *http.Request) { handleWebSocket(w, r, wsClosed) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { answer(w, r, http.StatusOK) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-upstream", name)
		for k, v := range r.Header {
			if lk := strings.ToLower(k); strings.HasPrefix(lk, RespHeaderPrefix) && len(lk) > len(RespHeaderPrefix) {
				w.Header()[http.CanonicalHeaderKey(lk[len(RespHeaderPrefix):])] = append([]string(nil), v...)
			}
		}
		mux.ServeHTTP(w, r)
	})
}

func handleStatus(w http.ResponseWriter, r *http.Request) {
	code, err := strconv.Atoi(r.PathValue("code"))
	if err != nil || code < 200 || code > 999 {
		http.Error(w, "status must be a final status code in [200, 999]", http.StatusBadRequest)
		return
	}
	answer(w, r, code)
}

func handleDelay(w http.ResponseWriter, r *http.Request, abandoned *atomic.Int64) {
	ms, err := strconv.Atoi(r.PathValue("ms"))
	d := time.Duration(ms) * time.Millisecond
	if err != nil || ms < 0 || d > maxDelay {
		http.Error(w, fmt.Sprintf("delay must be milliseconds in [0, %d]", maxDelay.Milliseconds()), http.StatusBadRequest)
		return
	}
	select {
	case <-time.After(d):
	case <-r.Context().Done():
		if abandoned != nil {
			abandoned.Add(1)
		}
		return // the client (or proxy) gave up; nobody is left to answer
	}
	answer(w, r, http.StatusOK)
}

// handleChunked streams flushed chunks and trailers, so proxies' chunked and trailer handling
// can be tested.
func handleChunked(w http.ResponseWriter, r *http.Request) {
	if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxRequestBody)); err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	q := r.URL.Query()
	chunks := []string{"chunk 0\n", "chunk 1\n", "chunk 2\n"}
	trailers := [][2]string{{"x-upstream-trailer", "done"}}
	var delay time.Duration
	if len(q) > 0 {
		var err error
		if chunks, trailers, delay, err = chunkedParams(q); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	names := make([]string, 0, len(trailers))
	for _, tr := range trailers {
		names = append(names, tr[0])
	}
	if len(names) > 0 {
		w.Header().Set("Trailer", strings.Join(names, ", "))
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	for i, c := range chunks {
		if i > 0 && !sleep(r, delay) {
			return
		}
		io.WriteString(w, c) //nolint:errcheck // the client went away; nothing to do
		if flusher != nil {
			flusher.Flush() // without a Content-Length, each flush is one chunk on the wire
		}
	}
	if len(trailers) > 0 && !sleep(r, delay) {
		return
	}
	for _, tr := range trailers {
		w.Header().Add(tr[0], tr[1])
	}
}

func chunkedParams(q url.Values) (chunks []string, trailers [][2]string, delay time.Duration, err error) {
	if q.Has("body") {
		chunks = []string{q.Get("body")}
	} else {
		n, size := 3, 4
		if q.Has("n") {
			if n, err = strconv.Atoi(q.Get("n")); err != nil || n < 0 || n > maxChunks {
				return nil, nil, 0, fmt.Errorf("n must be in [0, %d]", maxChunks)
			}
		}
		if q.Has("size") {
			if size, err = strconv.Atoi(q.Get("size")); err != nil || size < 1 || size > maxChunkSize {
				return nil, nil, 0, fmt.Errorf("size must be in [1, %d]", maxChunkSize)
			}
		}
		for i := range n {
			chunks = append(chunks, strings.Repeat(string(rune('a'+i%26)), size))
		}
	}
	for _, tr := range q["trailer"] {
		k, v, ok := strings.Cut(tr, ":")
		if !ok || k == "" {
			return nil, nil, 0, fmt.Errorf("trailer must be name:value, got %q", tr)
		}
		trailers = append(trailers, [2]string{k, v})
	}
	if q.Has("delay") {
		ms, err := strconv.Atoi(q.Get("delay"))
		if err != nil || ms < 0 || time.Duration(ms)*time.Millisecond > maxDelay {
			return nil, nil, 0, fmt.Errorf("delay must be milliseconds in [0, %d]", maxDelay.Milliseconds())
		}
		delay = time.Duration(ms) * time.Millisecond
	}
	return chunks, trailers, delay, nil
}

// sleep waits d unless the client goes away first (false then).
func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		return false
	}
}

func handleBytes(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 0 || n > maxBytes {
		http.Error(w, fmt.Sprintf("n must be in [0, %d]", maxBytes), http.StatusBadRequest)
		return
	}
	if _, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, maxRequestBody)); err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(n))
	w.WriteHeader(http.StatusOK)
	p := patternBlock()
	for n > 0 {
		k := min(n, len(p))
		if _, err := w.Write(p[:k]); err != nil {
			return
		}
		n -= k
	}
}

// handleMirror answers with the request body as received.
func handleMirror(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		http.Error(w, fmt.Sprintf("read body: %v", err), http.StatusRequestEntityTooLarge)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	write(w, r, http.StatusOK, body)
}

// answer sends the Echoed description of r (or the text of ?body=) with code.
func answer(w http.ResponseWriter, r *http.Request, code int) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		http.Error(w, fmt.Sprintf("read body: %v", err), http.StatusRequestEntityTooLarge)
		return
	}
	if q := r.URL.Query(); q.Has("body") {
		w.Header().Set("Content-Type", "text/plain")
		write(w, r, code, []byte(q.Get("body")))
		return
	}
	e := Echoed{
		Upstream:         w.Header().Get("x-upstream"),
		Method:           r.Method,
		URI:              r.RequestURI,
		Path:             r.URL.Path,
		Query:            r.URL.RawQuery,
		Host:             r.Host,
		Headers:          lower(r.Header),
		TransferEncoding: r.TransferEncoding,
		Body:             string(body),
		BodyLen:          len(body),
		Remote:           r.RemoteAddr,
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
	write(w, r, code, append(js, '\n'))
}

// write sends body with code: with content-length, or chunked for ?chunked=1 (in flushed
// 64 KiB pieces). A status that allows no body (204, 304) gets none, nor a content type.
func write(w http.ResponseWriter, r *http.Request, code int, body []byte) {
	if code == http.StatusNoContent || code == http.StatusNotModified {
		w.Header().Del("Content-Type")
		w.WriteHeader(code)
		return
	}
	flusher, _ := w.(http.Flusher)
	if r.URL.Query().Get("chunked") != "1" || flusher == nil {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(code)
		w.Write(body) //nolint:errcheck // the client went away; nothing to do
		return
	}
	w.WriteHeader(code)
	flusher.Flush()
	for len(body) > 0 {
		k := min(len(body), 64<<10)
		if _, err := w.Write(body[:k]); err != nil {
			return
		}
		flusher.Flush()
		body = body[k:]
	}
}

func lower(h http.Header) map[string][]string {
	out := make(map[string][]string, len(h))
	for k, v := range h {
		lk := strings.ToLower(k)
		out[lk] = append(out[lk], v...)
	}
	return out
}

// Pattern returns the n bytes /bytes/<n> answers: letters and digits in a position-dependent
// order with a period of 1 MiB, so a dropped, repeated or reordered piece of a large body
// shows (unlike a short repeating alphabet).
func Pattern(n int) []byte {
	p := patternBlock()
	out := make([]byte, 0, n)
	for len(out) < n {
		out = append(out, p[:min(n-len(out), len(p))]...)
	}
	return out
}

var patternOnce = sync.OnceValue(func() []byte {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	b := make([]byte, 1<<20)
	for i := range b {
		b[i] = alphabet[(i*7+i/len(alphabet))%len(alphabet)]
	}
	return b
})

func patternBlock() []byte { return patternOnce() }
