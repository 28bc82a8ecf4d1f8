package compile

import (
	golangv3alpha "github.com/envoyproxy/go-control-plane/contrib/envoy/extensions/filters/http/golang/v3alpha"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// httpFilters accepts golang filters and a final router. The filter kind comes from the
// typed_config type, as in Envoy; the name is free and keys typed_per_filter_config.
func (c *compiler) httpFilters(p ypath.Path, list []*hcmv3.HttpFilter) []bootstrap.HTTPFilter {
	out := []bootstrap.HTTPFilter{}
	seen := map[string]int{}
	sawRouter := false
	for i, hf := range list {
		fp := p.Index(i)
		c.only(fp, hf, "name", "typed_config")
		if j, dup := seen[hf.GetName()]; dup {
			// Per-route config is looked up by name, so two filters with one name are ambiguous.
			c.errs.Addf(fp.Field("name"), "http filter name %q is already used by http_filters[%d]", hf.GetName(), j)
		}
		seen[hf.GetName()] = i
		tc := hf.GetTypedConfig()
		tp := fp.Field("typed_config")
		if tc == nil {
			c.errs.Addf(tp, "is required")
			continue
		}
		msg, ok := c.unpack(tp, tc)
		if !ok {
			continue
		}
		switch cfg := msg.(type) {
		case *golangv3alpha.Config:
			out = append(out, bootstrap.HTTPFilter{Name: hf.GetName(), Type: bootstrap.FilterGolang, Golang: c.golang(tp, cfg)})
		case *routerv3.Router:
			c.only(tp, cfg) // every router option changes upstream behaviour moe-host lacks
			sawRouter = true
			if i != len(list)-1 {
				c.errs.Addf(fp, "the router filter must be the last http filter")
			}
			out = append(out, bootstrap.HTTPFilter{Name: hf.GetName(), Type: bootstrap.FilterRouter})
		default:
			c.errs.Addf(tp, "http filter %q of type %s is not supported by moe-host (golang and router only)", hf.GetName(), tc.GetTypeUrl())
		}
	}
	if !sawRouter {
		c.errs.Addf(p, "a router filter (envoy.extensions.filters.http.router.v3.Router) is required as the last http filter")
	}
	return out
}
