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
		c.only(lp, l, "name", "typed_config")
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
