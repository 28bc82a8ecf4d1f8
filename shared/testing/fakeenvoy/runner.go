package fakeenvoy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/filtermanager"
)

// Runner runs requests through a parsed moe chain: the entry point for plugin
// unit tests.
//
//	r, err := fakeenvoy.NewChain(`{"plugins":[{"name":"key-auth","config":{...}}]}`)
//	res := r.Do(fakeenvoy.Request{Headers: [][2]string{{"x-api-key", "k1"}}})
//	// res.Status, res.Upstream.Headers, res.LocalReply, res.Violations ...
type Runner struct {
	cfg any
}

// NewChain parses a moe filter config (the TypedStruct value as JSON), with
// metric callbacks, as Envoy would.
func NewChain(jsonText string) (*Runner, error) {
	cfg, err := ParseFilter(filtermanager.Parser{}, jsonText)
	if err != nil {
		return nil, err
	}
	return &Runner{cfg: cfg}, nil
}

// NewPlugin is NewChain for a single plugin and its config (any JSON-able
// value, or a JSON string).
func NewPlugin(name string, config any) (*Runner, error) {
	raw, err := rawJSON(config)
	if err != nil {
		return nil, err
	}
	return NewChain(fmt.Sprintf(`{"plugins":[{"name":%q,"config":%s}]}`, name, raw))
}

// WithRoute returns a runner for a route whose per-route config (a moe plugin
// list as JSON) is merged over this chain, as Envoy does on the first request
// of the route.
func (r *Runner) WithRoute(routeJSON string) (*Runner, error) {
	rc, err := ParseRoute(filtermanager.Parser{}, routeJSON)
	if err != nil {
		return nil, err
	}
	return &Runner{cfg: filtermanager.Parser{}.Merge(r.cfg, rc)}, nil
}

// Config is the parsed config object Envoy would hold.
func (r *Runner) Config() any { return r.cfg }

// Do runs one request.
func (r *Runner) Do(req Request) *Result { return Do(filtermanager.Factory, r.cfg, req) }

func rawJSON(v any) (string, error) {
	switch c := v.(type) {
	case nil:
		return "{}", nil
	case string:
		return c, nil
	case []byte:
		return string(c), nil
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// Forwarded sends req through the filter built from cfg and returns the status
// and the value of header as the upstream received it ("" when the request did
// not reach the upstream). It fails the test on SDK misuse or when the
// upstream got the header more than once (a spoofed copy left in place).
func Forwarded(t testing.TB, cfg any, req Request, header string) (int, string) {
	t.Helper()
	res := Do(filtermanager.Factory, cfg, req)
	if len(res.Violations) > 0 {
		t.Fatalf("SDK violations %v", res.Violations)
	}
	if res.Upstream == nil {
		return res.Status, ""
	}
	got := res.Upstream.Headers[strings.ToLower(header)]
	if len(got) != 1 {
		t.Fatalf("upstream %s: %v, want one value", header, got)
	}
	return res.Status, got[0]
}
