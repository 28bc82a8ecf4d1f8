package testplugins

import (
	"sort"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// SetHeadersConfig is the config of e2e-set-headers: request headers set as given, with no
// check at all (unlike header-mutation, which refuses hop-by-hop names), so a test can see
// what the host does with whatever a plugin leaves in the request.
type SetHeadersConfig struct {
	Request map[string]string `json:"request"`
}

type setHeaders struct{ cfg *SetHeadersConfig }

func (s *setHeaders) OnReceive(_ api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	keys := make([]string, 0, len(s.cfg.Request))
	for k := range s.cfg.Request {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		_ = h.Set(k, s.cfg.Request[k])
	}
	return api.Continue
}

func init() {
	registry.Register(registry.Plugin{
		Name:        "e2e-set-headers",
		Description: "e2e: sets request headers as configured, hop-by-hop ones included",
		NewConfig:   func() any { return &SetHeadersConfig{} },
		Factory:     registry.Typed(func(c *SetHeadersConfig) api.Filter { return &setHeaders{cfg: c} }),
	})
}
