package compile

import (
	"os"

	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filev3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/file/v3"
	streamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// Envoy's default access log format (source/common/formatter/http_formatter_context.cc
// DEFAULT_FORMAT), used when a logger has none.
const defaultAccessLogFormat = "[%START_TIME%] " +
	"\"%REQUEST_HEADER(:METHOD)% %REQUEST_HEADER(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%\" " +
	"%RESPONSE_CODE% " +
	"%RESPONSE_FLAGS% " +
	"%BYTES_RECEIVED% " +
	"%BYTES_SENT% " +
	"%DURATION% " +
	"%RESPONSE_HEADER(X-ENVOY-UPSTREAM-SERVICE-TIME)% " +
	"\"%REQUEST_HEADER(X-FORWARDED-FOR)%\" " +
	"\"%REQUEST_HEADER(USER-AGENT)%\" " +
	"\"%REQUEST_HEADER(X-REQUEST-ID)%\" " +
	"\"%REQUEST_HEADER(:AUTHORITY)%\" " +
	"\"%UPSTREAM_HOST%\"\n"

// accessLogs compiles the connection manager's access_log: the file logger
// (envoy.access_loggers.file, source/extensions/access_loggers/file/config.cc) and the stream
// loggers (envoy.access_loggers.stdout / stderr, .../stream/config.cc), without filters.
func (c *compiler) accessLogs(p ypath.Path, logs []*accesslogv3.AccessLog) []bootstrap.AccessLog {
	out := []bootstrap.AccessLog{}
	for i, l := range logs {
		lp := p.Index(i)
		c.only(lp, l, "name", "typed_config", "filter")
		tc := l.GetTypedConfig()
		if tc == nil {
			c.errs.Addf(lp.Field("typed_config"), "is required")
			continue
		}
		tp := lp.Field("typed_config")
		msg, ok := c.unpack(tp, tc)
		if !ok {
			continue
		}
		al := bootstrap.AccessLog{Name: l.GetName()}
		if l.GetFilter() != nil {
			al.Filter = c.accessLogFilter(lp.Field("filter"), l.GetFilter())
		}
		switch cfg := msg.(type) {
		case *filev3.FileAccessLog:
			c.only(tp, cfg, "path", "format", "json_format", "typed_json_format", "log_format")
			al.Type = bootstrap.AccessLogFile
			al.Path = cfg.GetPath()
			switch f := cfg.GetAccessLogFormat().(type) {
			case *filev3.FileAccessLog_Format:
				if f.Format == "" {
					al.Format = c.textFormat(tp.Field("format"), defaultAccessLogFormat, false)
				} else {
					al.Format = c.textFormat(tp.Field("format"), f.Format, false)
				}
			case *filev3.FileAccessLog_JsonFormat:
				al.Format = c.jsonFormat(tp.Field("json_format"), f.JsonFormat, false)
			case *filev3.FileAccessLog_TypedJsonFormat:
				al.Format = c.jsonFormat(tp.Field("typed_json_format"), f.TypedJsonFormat, false)
			case *filev3.FileAccessLog_LogFormat:
				al.Format = c.substitutionFormat(tp.Field("log_format"), f.LogFormat)
			default:
				al.Format = c.textFormat(tp, defaultAccessLogFormat, false)
			}
		case *streamv3.StdoutAccessLog:
			c.only(tp, cfg, "log_format")
			al.Type = bootstrap.AccessLogStdout
			al.Format = c.streamFormat(tp, cfg.GetLogFormat())
		case *streamv3.StderrAccessLog:
			c.only(tp, cfg, "log_format")
			al.Type = bootstrap.AccessLogStderr
			al.Format = c.streamFormat(tp, cfg.GetLogFormat())
		default:
			c.errs.Addf(tp, "access logger %s is not supported by moe-host (file, stdout and stderr loggers only)", tc.GetTypeUrl())
			continue
		}
		out = append(out, al)
	}
	return out
}

// accessLogFilter compiles an AccessLogFilter (FilterFactory::fromProto,
// source/common/access_log/access_log_impl.cc). Runtime keys are accepted and their defaults
// used, as Envoy does when the runtime has no such key (moe-host ignores layered_runtime).
// metadata_filter and extension_filter are refused.
func (c *compiler) accessLogFilter(p ypath.Path, f *accesslogv3.AccessLogFilter) *bootstrap.AccessLogFilter {
	comparison := func(fp ypath.Path, cf *accesslogv3.ComparisonFilter) (string, uint32) {
		cp := fp.Field("comparison")
		c.only(cp, cf, "op", "value")
		c.only(cp.Field("value"), cf.GetValue(), "default_value", "runtime_key")
		return cf.GetOp().String(), cf.GetValue().GetDefaultValue()
	}
	children := func(fp ypath.Path, fs []*accesslogv3.AccessLogFilter) []bootstrap.AccessLogFilter {
		out := []bootstrap.AccessLogFilter{}
		for i, child := range fs {
			if cf := c.accessLogFilter(fp.Field("filters").Index(i), child); cf != nil {
				out = append(out, *cf)
			}
		}
		return out
	}
	switch s := f.GetFilterSpecifier().(type) {
	case *accesslogv3.AccessLogFilter_StatusCodeFilter:
		fp := p.Field("status_code_filter")
		c.only(fp, s.StatusCodeFilter, "comparison")
		op, v := comparison(fp, s.StatusCodeFilter.GetComparison())
		return &bootstrap.AccessLogFilter{Type: bootstrap.LogFilterStatusCode, Op: op, Value: v}
	case *accesslogv3.AccessLogFilter_DurationFilter:
		fp := p.Field("duration_filter")
		c.only(fp, s.DurationFilter, "comparison")
		op, v := comparison(fp, s.DurationFilter.GetComparison())
		return &bootstrap.AccessLogFilter{Type: bootstrap.LogFilterDuration, Op: op, Value: v}
	case *accesslogv3.AccessLogFilter_NotHealthCheckFilter:
		return &bootstrap.AccessLogFilter{Type: bootstrap.LogFilterNotHealthCheck}
	case *accesslogv3.AccessLogFilter_TraceableFilter:
		return &bootstrap.AccessLogFilter{Type: bootstrap.LogFilterTraceable}
	case *accesslogv3.AccessLogFilter_RuntimeFilter:
		fp := p.Field("runtime_filter")
		rf := s.RuntimeFilter
		c.only(fp, rf, "runtime_key", "percent_sampled", "use_independent_randomness")
		out := &bootstrap.AccessLogFilter{Type: bootstrap.LogFilterRuntime, Denominator: 100,
			IndependentRandomness: rf.GetUseIndependentRandomness()}
		if ps := rf.GetPercentSampled(); ps != nil {
			c.only(fp.Field("percent_sampled"), ps, "numerator", "denominator")
			out.Numerator = ps.GetNumerator()
			// ProtobufPercentHelper::fractionalPercentDenominatorToInt.
			switch ps.GetDenominator().String() {
			case "TEN_THOUSAND":
				out.Denominator = 10000
			case "MILLION":
				out.Denominator = 1000000
			}
		}
		return out
	case *accesslogv3.AccessLogFilter_AndFilter:
		fp := p.Field("and_filter")
		c.only(fp, s.AndFilter, "filters")
		return &bootstrap.AccessLogFilter{Type: bootstrap.LogFilterAnd, Filters: children(fp, s.AndFilter.GetFilters())}
	case *accesslogv3.AccessLogFilter_OrFilter:
		fp := p.Field("or_filter")
		c.only(fp, s.OrFilter, "filters")
		return &bootstrap.AccessLogFilter{Type: bootstrap.LogFilterOr, Filters: children(fp, s.OrFilter.GetFilters())}
	case *accesslogv3.AccessLogFilter_HeaderFilter:
		fp := p.Field("header_filter")
		c.only(fp, s.HeaderFilter, "header")
		hm := c.headerMatcher(fp.Field("header"), s.HeaderFilter.GetHeader())
		return &bootstrap.AccessLogFilter{Type: bootstrap.LogFilterHeader, Header: &hm}
	case *accesslogv3.AccessLogFilter_ResponseFlagFilter:
		fp := p.Field("response_flag_filter")
		c.only(fp, s.ResponseFlagFilter, "flags")
		// The flag names are checked by the proto's validation rules.
		return &bootstrap.AccessLogFilter{Type: bootstrap.LogFilterResponseFlag,
			Flags: append([]string{}, s.ResponseFlagFilter.GetFlags()...)}
	case *accesslogv3.AccessLogFilter_GrpcStatusFilter:
		fp := p.Field("grpc_status_filter")
		c.only(fp, s.GrpcStatusFilter, "statuses", "exclude")
		out := &bootstrap.AccessLogFilter{Type: bootstrap.LogFilterGrpcStatus, Statuses: []uint32{},
			Exclude: s.GrpcStatusFilter.GetExclude()}
		for _, st := range s.GrpcStatusFilter.GetStatuses() {
			out.Statuses = append(out.Statuses, uint32(st))
		}
		return out
	case *accesslogv3.AccessLogFilter_LogTypeFilter:
		fp := p.Field("log_type_filter")
		c.only(fp, s.LogTypeFilter, "types", "exclude")
		out := &bootstrap.AccessLogFilter{Type: bootstrap.LogFilterLogType, Types: []string{},
			Exclude: s.LogTypeFilter.GetExclude()}
		for _, t := range s.LogTypeFilter.GetTypes() {
			out.Types = append(out.Types, t.String())
		}
		return out
	case *accesslogv3.AccessLogFilter_MetadataFilter:
		c.errs.Addf(p.Field("metadata_filter"), "not supported by moe-host")
	case *accesslogv3.AccessLogFilter_ExtensionFilter:
		c.errs.Addf(p.Field("extension_filter"), "not supported by moe-host")
	default:
		c.errs.Addf(p, "an access log filter needs one filter type")
	}
	return nil
}

func (c *compiler) streamFormat(p ypath.Path, f *corev3.SubstitutionFormatString) bootstrap.Format {
	if f == nil {
		return c.textFormat(p, defaultAccessLogFormat, false)
	}
	return c.substitutionFormat(p.Field("log_format"), f)
}

// substitutionFormat is SubstitutionFormatStringUtils::fromProtoConfig.
func (c *compiler) substitutionFormat(p ypath.Path, f *corev3.SubstitutionFormatString) bootstrap.Format {
	// content_type only matters for local reply bodies; json_format_options.sort_properties is
	// what Envoy does anyway (JsonFormatBuilder sorts keys).
	c.only(p, f, "text_format", "json_format", "text_format_source", "omit_empty_values", "content_type", "json_format_options")
	switch v := f.GetFormat().(type) {
	case *corev3.SubstitutionFormatString_TextFormat:
		return c.textFormat(p.Field("text_format"), v.TextFormat, f.GetOmitEmptyValues())
	case *corev3.SubstitutionFormatString_JsonFormat:
		return c.jsonFormat(p.Field("json_format"), v.JsonFormat, f.GetOmitEmptyValues())
	case *corev3.SubstitutionFormatString_TextFormatSource:
		text, ok := c.dataSource(p.Field("text_format_source"), v.TextFormatSource)
		if !ok {
			return c.textFormat(p, "", false)
		}
		return c.textFormat(p.Field("text_format_source"), text, f.GetOmitEmptyValues())
	}
	return c.textFormat(p, defaultAccessLogFormat, false)
}

// dataSource is Config::DataSource::read: inline, a file (read now, as Envoy reads it when the
// config loads; moe-host runs moectl at its start) or an environment variable.
func (c *compiler) dataSource(p ypath.Path, ds *corev3.DataSource) (string, bool) {
	c.only(p, ds, "inline_string", "inline_bytes", "filename", "environment_variable")
	switch v := ds.GetSpecifier().(type) {
	case *corev3.DataSource_InlineString:
		return v.InlineString, true
	case *corev3.DataSource_InlineBytes:
		return string(v.InlineBytes), true
	case *corev3.DataSource_Filename:
		b, err := os.ReadFile(v.Filename)
		if err != nil {
			c.errs.Addf(p.Field("filename"), "%v", err)
			return "", false
		}
		return string(b), true
	case *corev3.DataSource_EnvironmentVariable:
		val, ok := os.LookupEnv(v.EnvironmentVariable)
		if !ok {
			c.errs.Addf(p.Field("environment_variable"), "environment variable %s does not exist", v.EnvironmentVariable)
			return "", false
		}
		return val, true
	}
	return "", true
}
