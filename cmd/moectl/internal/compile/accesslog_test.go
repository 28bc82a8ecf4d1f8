package compile

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
)

func TestParseFormat(t *testing.T) {
	toks, err := parseFormat("a %REQ(X-A?:Path):5% 100%% %START_TIME(%Y:%m)% %PROTOCOL%\n")
	if err != nil {
		t.Fatal(err)
	}
	five := uint64(5)
	want := []bootstrap.FormatToken{
		{Text: "a "}, {Command: "REQ", Args: []string{"x-a", ":path"}, MaxLength: &five}, {Text: " 100% "},
		{Command: "START_TIME", Args: []string{"%Y:%m"}}, {Text: " "}, {Command: "PROTOCOL"}, {Text: "\n"},
	}
	got, _ := json.Marshal(toks)
	exp, _ := json.Marshal(want)
	if string(got) != string(exp) {
		t.Errorf("tokens:\n got %s\nwant %s", got, exp)
	}
	for format, wantErr := range map[string]string{
		"%FOO%":                     "Not supported field in StreamInfo: FOO",
		"%DOWNSTREAM_TLS_VERSION%":  "command %DOWNSTREAM_TLS_VERSION% is not supported by moe-host",
		"%PROTOCOL(x)%":             "PROTOCOL does not take any parameters or length",
		"%REQ%":                     "REQ requires parameters",
		"%RESPONSE_CODE_DETAILS%:5": "",
		"%START_TIME:5%":            "START_TIME does not allow length to be specified.",
		"%REQ(a?b?c)%":              "More than 1 alternative header specified in token: a?b?c",
		"%REQ(a b)%":                "Invalid header configuration. Format string contains invalid characters.",
		"%START_TIME(%n)%":          "Invalid header configuration. Format string contains newline.",
		"%FILTER_STATE(k:NOPE)%":    "Invalid filter state serialize type, only support PLAIN/TYPED/FIELD.",
		"%PATH(XQ)%":                "Invalid PATH option: 'XQ', only 'WQ'/'NQ' are allowed",
		"50% off":                   "Incorrect configuration: 50% off. Couldn't find valid command at position 2",
	} {
		_, err := parseFormat(format)
		switch {
		case wantErr == "" && err != nil:
			t.Errorf("%q: %v", format, err)
		case wantErr != "" && (err == nil || err.Error() != wantErr):
			t.Errorf("%q: error %v, want %q", format, err, wantErr)
		}
	}
}

const alPath = hcmPath + ".access_log"

func TestAccessLogsAreCompiled(t *testing.T) {
	res, err := compileString(t, minimal(t, map[string]string{"HCM": `access_log:
- name: out
  typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog}
- name: err
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StderrAccessLog
    log_format: {text_format_source: {inline_string: "%RESPONSE_CODE%\n"}, omit_empty_values: true}
- name: file
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog
    path: /tmp/x.log
    log_format: {json_format: {b: "%BYTES_SENT%", a: {num: 1.5, s: plain, l: [true, null, "%ROUTE_NAME%"]}}}`}))
	if err != nil {
		t.Fatal(err)
	}
	logs := res.Bootstrap.Listeners[0].HCM.AccessLog
	if len(logs) != 3 || logs[0].Type != "stdout" || logs[1].Type != "stderr" || logs[2].Type != "file" || logs[2].Path != "/tmp/x.log" {
		t.Fatalf("access logs: %+v", logs)
	}
	// No format: Envoy's default format.
	if logs[0].Format.Kind != "text" || logs[0].Format.Text[1].Command != "START_TIME" || logs[0].Format.Text[len(logs[0].Format.Text)-1].Text != "\"\n" {
		t.Errorf("default format: %+v", logs[0].Format)
	}
	if !logs[1].Format.OmitEmptyValues || logs[1].Format.Text[0].Command != "RESPONSE_CODE" {
		t.Errorf("stderr format: %+v", logs[1].Format)
	}
	// JSON: keys sorted, raw pieces around the templates.
	var pieces []string
	for _, p := range logs[2].Format.JSON {
		if p.Raw != nil {
			pieces = append(pieces, "raw:"+*p.Raw)
		} else {
			pieces = append(pieces, "tmpl:"+p.Template[0].Command)
		}
	}
	if got := strings.Join(pieces, " | "); got != `raw:{"a":{"l":[true,null, | tmpl:ROUTE_NAME | raw:],"num":1.5,"s":"plain"},"b": | tmpl:BYTES_SENT | raw:}` {
		t.Errorf("json pieces: %s", got)
	}
}

func TestAccessLogRefusals(t *testing.T) {
	for name, c := range map[string]struct{ snippet, want string }{
		"metadata filter": {"access_log: [{name: f, filter: {metadata_filter: {}}, typed_config: {\"@type\": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog}}]",
			alPath + "[0].filter.metadata_filter: not supported by moe-host"},
		"nested metadata filter": {"access_log: [{name: f, filter: {or_filter: {filters: [{traceable_filter: {}}, {metadata_filter: {}}]}}, typed_config: {\"@type\": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog}}]",
			alPath + "[0].filter.or_filter.filters[1].metadata_filter: not supported by moe-host"},
		"formatters": {"access_log: [{name: f, typed_config: {\"@type\": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog, log_format: {text_format: x, formatters: [{name: envoy.formatter.req_without_query, typed_config: {\"@type\": type.googleapis.com/google.protobuf.Empty}}]}}}]",
			alPath + "[0].typed_config.log_format.formatters: not supported by moe-host"},
		"bad command": {"access_log: [{name: f, typed_config: {\"@type\": type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog, path: /x, format: \"%NOPE%\"}}]",
			alPath + "[0].typed_config.format: Not supported field in StreamInfo: NOPE"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := compileString(t, minimal(t, map[string]string{"HCM": c.snippet}))
			wantError(t, err, c.want)
		})
	}
}

func TestHeaderListsAreCompiled(t *testing.T) {
	res, err := compileString(t, minimal(t, map[string]string{
		"ROUTE_CONFIG": "most_specific_header_mutations_wins: true\nresponse_headers_to_remove: [Server]",
		"VHOST":        "request_headers_to_add: [{header: {key: X-V, value: v}, append_action: ADD_IF_ABSENT}]",
		"ROUTE": `request_headers_to_add:
- {header: {key: x-s, value: "%PER_REQUEST_STATE(moe.consumer)%"}, append: false}
- {header: {key: x-m, value: "%DYNAMIC_METADATA([\"ns\", \"k\"])%"}, keep_empty_value: true}
request_headers_to_remove: [X-Gone]`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	rc := res.Bootstrap.Listeners[0].HCM.RouteConfig
	if !rc.MostSpecificHeaderMutationsWins || rc.Headers.ResponseHeadersToRemove[0] != "server" {
		t.Errorf("route config: %+v", rc.Headers)
	}
	v := rc.VirtualHosts[0].Headers.RequestHeadersToAdd[0]
	if v.Key != "x-v" || v.AppendAction != "ADD_IF_ABSENT" {
		t.Errorf("vhost: %+v", v)
	}
	r := rc.VirtualHosts[0].Routes[0].Headers
	s, m := r.RequestHeadersToAdd[0], r.RequestHeadersToAdd[1]
	// Envoy's legacy translations: PER_REQUEST_STATE(k) is FILTER_STATE(k:PLAIN), the JSON
	// list of DYNAMIC_METADATA keys is the colon form.
	if s.AppendAction != "OVERWRITE_IF_EXISTS_OR_ADD" || s.Value.Text[0].Command != "FILTER_STATE" ||
		strings.Join(s.Value.Text[0].Args, ":") != "moe.consumer:PLAIN" || !s.Value.OmitEmptyValues {
		t.Errorf("x-s: %+v", s)
	}
	if m.Value.Text[0].Command != "DYNAMIC_METADATA" || strings.Join(m.Value.Text[0].Args, ":") != "ns:k" || !m.KeepEmptyValue {
		t.Errorf("x-m: %+v", m)
	}
	if r.RequestHeadersToRemove[0] != "x-gone" {
		t.Errorf("remove: %v", r.RequestHeadersToRemove)
	}
	for name, c := range map[string]struct{ snippets map[string]string }{
		routePath + ".request_headers_to_add[0].header.key: :-prefixed or host headers may not be modified":  {map[string]string{"ROUTE": "request_headers_to_add: [{header: {key: host, value: x}}]"}},
		routePath + ".response_headers_to_remove[0]: :-prefixed or host headers may not be removed":          {map[string]string{"ROUTE": "response_headers_to_remove: [':status']"}},
		routePath + ".request_headers_to_add[0]: Both append and append_action are set and it's not allowed": {map[string]string{"ROUTE": "request_headers_to_add: [{header: {key: a, value: x}, append: true, append_action: ADD_IF_ABSENT}]"}},
	} {
		_, err := compileString(t, minimal(t, c.snippets))
		wantError(t, err, name)
	}
}

func TestRetryPolicyIsCompiled(t *testing.T) {
	res, err := compileString(t, minimal(t, map[string]string{
		"VHOST": "retry_policy: {retry_on: \"5xx, connect-failure,bogus\", num_retries: 4, retry_back_off: {base_interval: 0.01s}}",
		"ROUTES": `- match: {path: /own}
  route: {cluster: backend, retry_policy: {retry_on: reset, per_try_timeout: 0.25s, retriable_status_codes: [418]}}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	routes := res.Bootstrap.Listeners[0].HCM.RouteConfig.VirtualHosts[0].Routes
	vh, own := routes[0].Route.RetryPolicy, routes[1].Route.RetryPolicy
	if vh == nil || strings.Join(vh.RetryOn, ",") != "5xx,connect-failure" || vh.NumRetries != 4 || *vh.BaseIntervalMS != 10 || vh.MaxIntervalMS != nil {
		t.Errorf("virtual host policy inherited: %+v", vh)
	}
	// The route's own policy replaces the virtual host's (num_retries defaults to 1).
	if own == nil || strings.Join(own.RetryOn, ",") != "reset" || own.NumRetries != 1 || own.PerTryTimeoutMS != 250 || own.RetriableStatusCodes[0] != 418 {
		t.Errorf("route policy: %+v", own)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], `unknown retry_on token "bogus" is ignored`) {
		t.Errorf("warnings: %v", res.Warnings)
	}
	_, err = compileString(t, minimal(t, map[string]string{"ACTION": "retry_policy: {retry_back_off: {base_interval: 1s, max_interval: 0.5s}}"}))
	wantError(t, err, routePath+".route.retry_policy.retry_back_off.max_interval: retry_policy.max_interval must greater than or equal to the base_interval")
}

func TestConfigDumpRedactsSecrets(t *testing.T) {
	res, err := compileString(t, minimal(t, map[string]string{"SECRETS": "secrets: [{name: s, generic_secret: {secret: {inline_string: hunter2}}}]"}))
	if err != nil {
		t.Fatal(err)
	}
	dump := string(res.Bootstrap.ConfigDump)
	if strings.Contains(dump, "hunter2") || !strings.Contains(dump, `"inline_string": "[redacted]"`) {
		t.Errorf("secret not redacted:\n%s", dump)
	}
	var d struct {
		Configs []map[string]any `json:"configs"`
	}
	if err := json.Unmarshal(res.Bootstrap.ConfigDump, &d); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, c := range d.Configs {
		types = append(types, strings.TrimPrefix(c["@type"].(string), "type.googleapis.com/envoy.admin.v3."))
	}
	if got := strings.Join(types, ","); got != "BootstrapConfigDump,ClustersConfigDump,ListenersConfigDump,RoutesConfigDump,ScopedRoutesConfigDump,SecretsConfigDump" {
		t.Errorf("config dump types: %s", got)
	}
}

func TestAccessLogFiltersAreCompiled(t *testing.T) {
	res, err := compileString(t, minimal(t, map[string]string{"HCM": `access_log:
- name: f
  typed_config: {"@type": type.googleapis.com/envoy.extensions.access_loggers.stream.v3.StdoutAccessLog}
  filter:
    and_filter:
      filters:
      - status_code_filter: {comparison: {op: GE, value: {default_value: 400, runtime_key: access_log.min_status}}}
      - duration_filter: {comparison: {value: {default_value: 10, runtime_key: d}}}
      - or_filter:
          filters:
          - not_health_check_filter: {}
          - traceable_filter: {}
          - header_filter: {header: {name: X-Debug, range_match: {start: 1, end: 5}}}
          - response_flag_filter: {flags: [UH, NR]}
          - grpc_status_filter: {statuses: [UNAVAILABLE, OK], exclude: true}
          - log_type_filter: {types: [DownstreamEnd]}
          - runtime_filter: {runtime_key: sample, percent_sampled: {numerator: 5, denominator: TEN_THOUSAND}, use_independent_randomness: true}
          - runtime_filter: {runtime_key: sample2}`}))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(res.Bootstrap.Listeners[0].HCM.AccessLog[0].Filter)
	want := `{"type":"and","filters":[` +
		`{"type":"status_code","op":"GE","value":400},` +
		`{"type":"duration","op":"EQ","value":10},` +
		`{"type":"or","filters":[{"type":"not_health_check"},{"type":"traceable"},` +
		`{"type":"header","header":{"name":"X-Debug","kind":"range","value":"","present":true,"invert":false,"ignore_case":false,"range_start":1,"range_end":5}},` +
		`{"type":"response_flag","flags":["UH","NR"]},` +
		`{"type":"grpc_status","statuses":[14,0],"exclude":true},` +
		`{"type":"log_type","types":["DownstreamEnd"]},` +
		`{"type":"runtime","numerator":5,"denominator":10000,"independent_randomness":true},` +
		`{"type":"runtime","denominator":100}]}]}`
	if string(got) != want {
		t.Errorf("filter:\n got %s\nwant %s", got, want)
	}
}
