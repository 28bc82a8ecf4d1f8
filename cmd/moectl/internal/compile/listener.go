package compile

import (
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// Envoy defaults (http_connection_manager.proto).
const (
	defaultMaxRequestHeadersKB = 60
	defaultStreamIdleTimeoutMS = 5 * 60 * 1000
)

// listener accepts one filter chain holding one http_connection_manager: moe-host has no
// filter chain matching and no other network filters.
func (c *compiler) listener(p ypath.Path, l *listenerv3.Listener) bootstrap.Listener {
	c.only(p, l, "name", "address", "filter_chains", "per_connection_buffer_limit_bytes")
	out := bootstrap.Listener{
		Name:                          l.GetName(),
		Address:                       c.socketAddress(p.Field("address"), l.GetAddress(), false),
		PerConnectionBufferLimitBytes: u32(l.GetPerConnectionBufferLimitBytes(), defaultBufferLimit),
		HCM:                           emptyHCM(),
	}
	chains := l.GetFilterChains()
	if len(chains) != 1 {
		c.errs.Addf(p.Field("filter_chains"), "moe-host supports exactly one filter chain, got %d", len(chains))
		if len(chains) == 0 {
			return out
		}
	}
	fcp := p.Field("filter_chains").Index(0)
	c.only(fcp, chains[0], "name", "filters")
	filters := chains[0].GetFilters()
	if len(filters) != 1 {
		c.errs.Addf(fcp.Field("filters"), "moe-host supports exactly one network filter (http_connection_manager), got %d", len(filters))
		if len(filters) == 0 {
			return out
		}
	}
	fp := fcp.Field("filters").Index(0)
	c.only(fp, filters[0], "name", "typed_config")
	tc := filters[0].GetTypedConfig()
	if tc == nil {
		c.errs.Addf(fp.Field("typed_config"), "is required")
		return out
	}
	tp := fp.Field("typed_config")
	msg, ok := c.unpack(tp, tc)
	if !ok {
		return out
	}
	hcm, ok := msg.(*hcmv3.HttpConnectionManager)
	if !ok {
		c.errs.Addf(tp, "network filter %s is not supported by moe-host (only http_connection_manager)", tc.GetTypeUrl())
		return out
	}
	out.HCM = c.hcm(tp, hcm)
	return out
}

func emptyHCM() bootstrap.HttpConnectionManager {
	return bootstrap.HttpConnectionManager{
		PathWithEscapedSlashesAction: "KEEP_UNCHANGED",
		StripPort:                    "NONE",
		AccessLog:                    []bootstrap.AccessLog{},
		HTTPFilters:                  []bootstrap.HTTPFilter{},
		RouteConfig:                  bootstrap.RouteConfiguration{PerFilterConfig: bootstrap.PerFilterConfig{}, VirtualHosts: []bootstrap.VirtualHost{}},
	}
}

func (c *compiler) hcm(p ypath.Path, h *hcmv3.HttpConnectionManager) bootstrap.HttpConnectionManager {
	c.only(p, h, "stat_prefix", "codec_type", "route_config", "http_filters",
		"max_request_headers_kb", "request_timeout", "request_headers_timeout", "stream_idle_timeout",
		"access_log_options", "flush_access_log_on_new_request", "access_log", "rds", "upgrade_configs",
		"normalize_path", "merge_slashes", "path_with_escaped_slashes_action",
		"strip_matching_host_port", "strip_any_host_port", "strip_trailing_host_dot")
	switch h.GetCodecType() {
	case hcmv3.HttpConnectionManager_AUTO, hcmv3.HttpConnectionManager_HTTP1:
	default:
		c.errs.Addf(p.Field("codec_type"), "%s is not supported by moe-host (HTTP/1.1 only; AUTO or HTTP1)", h.GetCodecType())
	}
	out := emptyHCM()
	out.StatPrefix = h.GetStatPrefix()
	out.MaxRequestHeadersKB = u32(h.GetMaxRequestHeadersKb(), defaultMaxRequestHeadersKB)
	out.RequestTimeoutMS = c.millis(p.Field("request_timeout"), h.GetRequestTimeout(), 0)
	out.RequestHeadersTimeoutMS = c.millis(p.Field("request_headers_timeout"), h.GetRequestHeadersTimeout(), 0)
	out.StreamIdleTimeoutMS = c.millis(p.Field("stream_idle_timeout"), h.GetStreamIdleTimeout(), defaultStreamIdleTimeoutMS)
	out.FlushAccessLogOnNewRequest = c.flushAccessLogOnNewRequest(p, h)
	if opts := h.GetAccessLogOptions(); opts != nil {
		out.AccessLogFlushIntervalMS = c.millis(p.Field("access_log_options").Field("access_log_flush_interval"), opts.GetAccessLogFlushInterval(), 0)
	}
	c.requestTarget(h, &out)
	out.AccessLog = c.accessLogs(p.Field("access_log"), h.GetAccessLog())
	out.UpgradeConfigs = c.hcmUpgradeConfigs(p.Field("upgrade_configs"), h.GetUpgradeConfigs())
	out.HTTPFilters = c.httpFilters(p.Field("http_filters"), h.GetHttpFilters())
	if rc := h.GetRouteConfig(); rc != nil {
		out.RouteConfig = c.routeConfig(p.Field("route_config"), rc, filtersByName(out.HTTPFilters))
	} else if r := h.GetRds(); r != nil {
		out.RDS = c.rds(p.Field("rds"), r)
	} else if h.GetScopedRoutes() == nil {
		c.errs.Addf(p.Field("route_config"), "is required")
	}
	return out
}

func filtersByName(fs []bootstrap.HTTPFilter) map[string]bootstrap.HTTPFilter {
	m := make(map[string]bootstrap.HTTPFilter, len(fs))
	for _, f := range fs {
		m[f.Name] = f
	}
	return m
}

// flushAccessLogOnNewRequest makes the golang filter's OnLogDownstreamStart run. It may be set
// in access_log_options or in the deprecated top-level field; Envoy reads the latter only when
// access_log_options is absent, so setting both is refused as ambiguous.
func (c *compiler) flushAccessLogOnNewRequest(p ypath.Path, h *hcmv3.HttpConnectionManager) bool {
	opts := h.GetAccessLogOptions()
	if opts == nil {
		return h.GetFlushAccessLogOnNewRequest()
	}
	op := p.Field("access_log_options")
	// flush_log_on_tunnel_successfully_established (a log when an upgrade is accepted) is not
	// implemented: refused.
	c.only(op, opts, "flush_access_log_on_new_request", "access_log_flush_interval")
	if h.GetFlushAccessLogOnNewRequest() {
		c.errs.Addf(p.Field("flush_access_log_on_new_request"), "set it in access_log_options only (Envoy ignores this deprecated field when access_log_options is present)")
	}
	return opts.GetFlushAccessLogOnNewRequest()
}

// requestTarget copies the path and host normalisation settings. Envoy's defaults:
// normalize_path off (its runtime default http_connection_manager.normalize_path is 0),
// IMPLEMENTATION_SPECIFIC_DEFAULT read as KEEP_UNCHANGED (no runtime override here), no port
// stripping. strip_matching_host_port and strip_any_host_port are a oneof in the proto.
func (c *compiler) requestTarget(h *hcmv3.HttpConnectionManager, out *bootstrap.HttpConnectionManager) {
	out.NormalizePath = h.GetNormalizePath().GetValue()
	out.MergeSlashes = h.GetMergeSlashes()
	switch a := h.GetPathWithEscapedSlashesAction(); a {
	case hcmv3.HttpConnectionManager_IMPLEMENTATION_SPECIFIC_DEFAULT:
		out.PathWithEscapedSlashesAction = "KEEP_UNCHANGED"
	default:
		out.PathWithEscapedSlashesAction = a.String()
	}
	switch {
	case h.GetStripAnyHostPort():
		out.StripPort = "ANY"
	case h.GetStripMatchingHostPort():
		out.StripPort = "MATCHING_HOST"
	default:
		out.StripPort = "NONE"
	}
	out.StripTrailingHostDot = h.GetStripTrailingHostDot()
}
