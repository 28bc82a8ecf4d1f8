package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"testing"

	"github.com/moeproxy/moe/shared/testing/echo"
)

// The upstreams are the project's echo upstream (shared/testing/echo), on 127.0.0.1: the
// Echoed JSON for most paths, /status/N, /delay/MS, /chunked (n, size, body, trailer, delay),
// /bytes/N (echo.Pattern), ?body=S, and "x-echo-resp-<h>: v" request headers answered as
// response headers "<h>: v". Every response carries "x-upstream: <name>".
func startUpstream(t testing.TB, name string) *echo.Server {
	t.Helper()
	return echo.Start(t, name)
}

// respTrailers are the trailers trailersPath asks the upstream for: the names of Envoy's
// golang_integration_test.cc trailer scenarios.
const respTrailers = "trailer=x-trailer:bar&trailer=x-resp-trailer-1:baz"

// trailersPath is an upstream path answered with body as one chunk and then, after delayMS,
// the trailers x-trailer: bar and x-resp-trailer-1: baz.
func trailersPath(body string, delayMS int) string {
	p := "/chunked?body=" + body + "&" + respTrailers
	if delayMS > 0 {
		p += fmt.Sprintf("&delay=%d", delayMS)
	}
	return p
}

// echoReply is what the echo upstream saw.
type echoReply struct{ echo.Echoed }

func (e *echoReply) header(k string) string         { return e.Header(k) }
func (e *echoReply) headerValues(k string) []string { return e.Values(k) }
func (e *echoReply) trailer(k string) []string      { return e.TrailerValues(k) }

func parseEcho(body string) (*echoReply, error) {
	var rep echoReply
	err := json.Unmarshal([]byte(body), &rep.Echoed)
	return &rep, err
}

// pattern returns the n bytes the upstream's /bytes/<n> answers.
func pattern(n int) []byte { return echo.Pattern(n) }

func sortedKeys(m map[string]int64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func ioCopy(w io.Writer, res *http.Response) (int64, error) {
	defer res.Body.Close()
	return io.Copy(w, res.Body)
}
