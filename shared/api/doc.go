// Package api is the plugin-facing API of moe: the only framework package a
// plugin imports (plus helpers: shared/registry to register, shared/variables,
// shared/consumer). Plugins are MOSN-style stream filters; the framework runs
// them in one Envoy golang filter ("moe") and hides cgo, threads and Envoy's
// stream lifecycle.
//
// # Writing a plugin
//
//	package denyheader
//
//	import (
//		"github.com/moeproxy/moe/shared/api"
//		"github.com/moeproxy/moe/shared/registry"
//	)
//
//	type Config struct {
//		Header string `json:"header"` // default below
//		Status int    `json:"status"`
//	}
//
//	func (c *Config) Validate() error {
//		if c.Status < 400 || c.Status > 599 {
//			return api.FieldErrorf("status", "must be 4xx or 5xx, got %d", c.Status)
//		}
//		return nil
//	}
//
//	type filter struct{ cfg *Config }
//
//	func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
//		if _, ok := h.Get(f.cfg.Header); ok {
//			ctx.Receiver().SendHijackReply(f.cfg.Status, nil)
//			return api.Stop
//		}
//		return api.Continue
//	}
//
//	func init() {
//		registry.Register(registry.Plugin{
//			Name:      "deny-header",
//			NewConfig: func() any { return &Config{Header: "x-deny", Status: 403} },
//			// One shared, stateless filter per config: no allocation per request.
//			Factory: registry.Typed(func(c *Config) api.Filter { return &filter{cfg: c} }),
//			Needs:   api.Needs{Phase: api.AfterRoute},
//		})
//	}
//
// Then blank-import the package in plugins/all/all.go. Users enable it in the
// moe filter's TypedStruct: plugins: [{name: deny-header, config: {status: 401}}],
// or as a golang filter of its own with plugin_name: deny-header.
//
// # Rules in short
//
//   - Filters implement any of ReceiverFilter (OnReceive), SenderFilter (Append),
//     StreamingReceiver/StreamingSender (body chunks), AccessLogger (Log) and
//     Destroyer (OnDestroy). Return Continue, or Stop right after replying.
//   - Declare Needs: Phase (BeforeRoute/AfterRoute), RequestBody/ResponseBody
//     (HeadersOnly by default, WholeBody, StreamingBody) and MayBlock for phases
//     doing I/O. Undeclared phases run on Envoy's worker thread: never block there.
//   - Config: a struct with json tags; NewConfig returns defaults; optional
//     Validate() error and Init(api.ConfigEnv) error run once per config version.
//     Unknown fields and wrong types are rejected by the framework.
//   - Headers, bodies and handlers belong to the running phase. From a goroutine
//     that outlives it they fail with *StreamError (ErrReleased, ErrDestroyed).
//     Start goroutines with api.Go. Panics become a 500 naming the plugin.
//   - Share request-scoped data through ctx: SetConsumer/Consumer,
//     SetState/GetState, Var, and log with ctx.Log().
//
// Unit-test a plugin with shared/testing/fakeenvoy, which runs the real framework over a
// fake Envoy: fakeenvoy.NewPlugin("deny-header", `{"status":401}`) then
// r.Do(fakeenvoy.Request{...}) gives the status, what reached the upstream, the
// local reply and any SDK misuse (Result.Violations).
//
// See shared/README.md for the full guide (porting a MOSN filter, merge rules,
// sync vs async, guarantees).
package api
