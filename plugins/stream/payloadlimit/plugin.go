// Package payloadlimit is the payload-limit plugin: request bodies over a
// size are refused (413) from their Content-Length before any body arrives,
// or by counting a chunked body as it streams, never buffering it; an
// optional response limit does the same for responses.
//
// Files: size.go (the size type: "10m", "512k"), config.go (Config,
// defaults, Validate, Needs), compiled.go (what Init builds), filter.go
// (the request and response paths).
package payloadlimit

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// Name is the registered plugin name.
const Name = "payload-limit"

func init() {
	registry.Register(registry.Plugin{
		Name:        Name,
		Description: "refuses request bodies over a size with 413 (Content-Length first, chunked bodies by counting, no buffering); optional response limit",
		NewConfig:   newConfig,
		// One small object per request: the running byte counts.
		Factory: registry.Typed(newFilter),
		// Config.Needs streams only the directions with a limit.
		Needs: api.Needs{Phase: api.AfterRoute, RequestBody: api.StreamingBody},
	})
}

var (
	_ api.ReceiverFilter    = (*reqFilter)(nil)
	_ api.StreamingReceiver = (*reqFilter)(nil)
	_ api.SenderFilter      = (*respFilter)(nil)
	_ api.StreamingSender   = (*respFilter)(nil)
	_ api.ReceiverFilter    = (*bothFilter)(nil)
	_ api.SenderFilter      = (*bothFilter)(nil)
	_ api.StreamingReceiver = (*bothFilter)(nil)
	_ api.StreamingSender   = (*bothFilter)(nil)

	_ api.Validator     = (*Config)(nil)
	_ api.Initializer   = (*Config)(nil)
	_ api.NeedsProvider = (*Config)(nil)
)
