package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
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

// echo is what every request is answered with (unless the path asks for something else).
type echo struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Query  string `json:"query"`
	Host   string `json:"host"`
	// Headers has lower-cased names; repeated headers are joined with ",".
	Headers  map[string]string `json:"headers"`
	Body     string            `json:"body"`
	BodyLen  int               `json:"body_len"`
	Trailers map[string]string `json:"trailers,omitempty"`
	Remote   string            `json:"remote"`
}

// newHandler routes the special paths; everything else is echoed.
func newHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/status/{code}", handleStatus)
	mux.HandleFunc("/delay/{ms}", handleDelay)
	mux.HandleFunc("/chunked", handleChunked)
	mux.HandleFunc("/bytes/{n}", handleBytes)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { writeEcho(w, r, http.StatusOK) })
	return mux
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
	e := echo{
		Method:  r.Method,
		Path:    r.URL.Path,
		Query:   r.URL.RawQuery,
		Host:    r.Host,
		Headers: flatten(r.Header),
		Body:    string(body),
		BodyLen: len(body),
		Remote:  r.RemoteAddr,
	}
	if len(r.Trailer) > 0 {
		e.Trailers = flatten(r.Trailer)
	}
	js, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(js, '\n')) //nolint:errcheck // the client went away; nothing to do
}

func flatten(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out[strings.ToLower(k)] = strings.Join(h[k], ",")
	}
	return out
}
