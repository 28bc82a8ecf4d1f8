package compile

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// Envoy's substitution format strings (source/common/formatter/substitution_formatter.cc
// SubstitutionFormatParser::parse), parsed here once so that moe-host only evaluates tokens:
// literal text, "%%" for a percent sign, and command operators %COMMAND(SUBCOMMAND):LENGTH%
// checked with Envoy's syntax rules (CommandSyntaxChecker) and split the way each command reads
// its subcommand. A command Envoy knows but moe-host cannot evaluate is refused.

// commandWithArgsRegex (substitution_formatter.cc).
var commandRE = regexp.MustCompile(`^%((?:[A-Z]|[0-9]|_)+)(?:\((.*?)\))?(?::([0-9]+))?%`)

type cmdSyntax int

const (
	commandOnly    cmdSyntax = 0
	paramsRequired cmdSyntax = 1
	paramsOptional cmdSyntax = 2
	lengthAllowed  cmdSyntax = 4
)

// command is how moe-host takes one command operator: its syntax flags (as Envoy's table) and
// how its subcommand becomes the token's args.
type command struct {
	syn  cmdSyntax
	args func(sub string) ([]string, error)
}

func noArgs(string) ([]string, error) { return nil, nil }
func rawArg(sub string) ([]string, error) {
	if sub == "" {
		return nil, nil
	}
	return []string{sub}, nil
}

// headerNameRE is Http::HeaderUtility::headerNameIsValid: RFC 7230 token characters, a leading
// ':' for pseudo-headers.
var headerNameRE = regexp.MustCompile("^:?[!#$%&'*+\\-.^_`|~0-9a-zA-Z]*$")

// headerArgs is SubstitutionFormatUtils::parseSubcommandHeaders: MAIN?ALTERNATIVE, lowercased.
func headerArgs(sub string) ([]string, error) {
	parts := strings.Split(sub, "?")
	if len(parts) > 2 {
		return nil, fmt.Errorf("More than 1 alternative header specified in token: %s", sub)
	}
	for _, p := range parts {
		if !headerNameRE.MatchString(strings.ToLower(p)) {
			return nil, fmt.Errorf("Invalid header configuration. Format string contains invalid characters.")
		}
	}
	out := []string{strings.ToLower(parts[0]), ""}
	if len(parts) == 2 {
		out[1] = strings.ToLower(parts[1])
	}
	return out, nil
}

// timeNewlineRE: SystemTimeFormatter refuses a format that would print a newline.
var timeNewlineRE = regexp.MustCompile(`%[-_0^#]*[1-9]*(E|O)?n`)

func timeArgs(sub string) ([]string, error) {
	if timeNewlineRE.MatchString(sub) {
		return nil, fmt.Errorf("Invalid header configuration. Format string contains newline.")
	}
	return rawArg(sub)
}

// FilterStateFormatter::create: KEY[:PLAIN|TYPED|FIELD[:FIELD_NAME]].
func filterStateArgs(sub string) ([]string, error) {
	parts := strings.Split(sub, ":")
	key, typ, field := parts[0], "", ""
	if len(parts) > 1 {
		typ = parts[1]
	}
	if len(parts) > 2 {
		field = parts[2]
	}
	if key == "" {
		return nil, fmt.Errorf("Invalid filter state configuration, key cannot be empty.")
	}
	if typ == "" {
		typ = "TYPED"
	}
	if typ != "PLAIN" && typ != "TYPED" && typ != "FIELD" {
		return nil, fmt.Errorf("Invalid filter state serialize type, only support PLAIN/TYPED/FIELD.")
	}
	if (typ == "FIELD") != (field != "") {
		return nil, fmt.Errorf("Invalid filter state serialize type, FIELD should be used with the field name.")
	}
	if typ == "FIELD" {
		// A string filter state object (all moe-host has) has no fields: Envoy's getField of a
		// StringAccessor answers nothing, so the value is always absent.
		return []string{key, typ, field}, nil
	}
	return []string{key, typ}, nil
}

// NAMESPACE:KEY:KEY...
func metadataArgs(sub string) ([]string, error) { return strings.Split(sub, ":"), nil }

// The mask prefix length of *_ADDRESS_WITHOUT_PORT (absl::SimpleAtoi; anything else: no mask).
func maskArgs(sub string) ([]string, error) {
	if _, err := strconv.Atoi(sub); sub == "" || err != nil {
		return nil, nil
	}
	return []string{sub}, nil
}

func detailsArgs(sub string) ([]string, error) {
	if sub == "ALLOW_WHITESPACES" {
		return []string{sub}, nil
	}
	return nil, nil
}

// PathFormatter::create: [WQ|NQ][:ORIG|PATH|ORIG_OR_PATH].
func pathArgs(sub string) ([]string, error) {
	parts := strings.Split(sub, ":")
	q, opt := parts[0], ""
	if len(parts) > 1 {
		opt = parts[1]
	}
	switch q {
	case "", "WQ":
		q = "WQ"
	case "NQ":
	default:
		return nil, fmt.Errorf("Invalid PATH option: '%s', only 'WQ'/'NQ' are allowed", q)
	}
	switch opt {
	case "", "ORIG_OR_PATH":
		opt = "ORIG_OR_PATH"
	case "ORIG", "PATH":
	default:
		return nil, fmt.Errorf("Invalid PATH option: '%s', only 'ORIG'/'PATH'/'ORIG_OR_PATH' are allowed", opt)
	}
	return []string{q, opt}, nil
}

// supportedCommands are the command operators moe-host evaluates (cgo/host/formatter.cc), with
// Envoy's syntax flags (stream_info_formatter.cc, http_specific_formatter.cc).
var supportedCommands = map[string]command{
	"REQ":              {paramsRequired | lengthAllowed, headerArgs},
	"REQUEST_HEADER":   {paramsRequired | lengthAllowed, headerArgs},
	"RESP":             {paramsRequired | lengthAllowed, headerArgs},
	"RESPONSE_HEADER":  {paramsRequired | lengthAllowed, headerArgs},
	"TRAILER":          {paramsRequired | lengthAllowed, headerArgs},
	"RESPONSE_TRAILER": {paramsRequired | lengthAllowed, headerArgs},
	"STREAM_INFO_REQ":  {paramsRequired | lengthAllowed, headerArgs},

	"START_TIME":       {paramsOptional, timeArgs},
	"START_TIME_LOCAL": {paramsOptional, timeArgs},
	"EMIT_TIME":        {paramsOptional, timeArgs},
	"EMIT_TIME_LOCAL":  {paramsOptional, timeArgs},

	"PROTOCOL":              {commandOnly, noArgs},
	"UPSTREAM_PROTOCOL":     {commandOnly, noArgs},
	"RESPONSE_CODE":         {commandOnly, noArgs},
	"RESPONSE_CODE_DETAILS": {paramsOptional, detailsArgs},
	"RESPONSE_FLAGS":        {commandOnly, noArgs},
	"RESPONSE_FLAGS_LONG":   {commandOnly, noArgs},
	"CUSTOM_FLAGS":          {commandOnly, noArgs},
	"BYTES_RECEIVED":        {commandOnly, noArgs},
	"BYTES_SENT":            {commandOnly, noArgs},
	"DURATION":              {commandOnly, noArgs},
	"REQUEST_DURATION":      {commandOnly, noArgs},
	"RESPONSE_DURATION":     {commandOnly, noArgs},
	"RESPONSE_TX_DURATION":  {commandOnly, noArgs},

	"UPSTREAM_HOST":                         {commandOnly, noArgs},
	"UPSTREAM_HOST_NAME":                    {commandOnly, noArgs},
	"UPSTREAM_HOST_NAME_WITHOUT_PORT":       {commandOnly, noArgs},
	"UPSTREAM_HOSTS_ATTEMPTED":              {commandOnly, noArgs},
	"UPSTREAM_HOSTS_ATTEMPTED_WITHOUT_PORT": {commandOnly, noArgs},
	"UPSTREAM_CLUSTER":                      {commandOnly, noArgs},
	"UPSTREAM_CLUSTER_RAW":                  {commandOnly, noArgs},
	"UPSTREAM_REMOTE_ADDRESS":               {commandOnly, noArgs},
	"UPSTREAM_REMOTE_ADDRESS_WITHOUT_PORT":  {paramsOptional, maskArgs},
	"UPSTREAM_REMOTE_PORT":                  {commandOnly, noArgs},
	"UPSTREAM_REQUEST_ATTEMPT_COUNT":        {commandOnly, noArgs},
	"UPSTREAM_TRANSPORT_FAILURE_REASON":     {commandOnly, noArgs},

	"DOWNSTREAM_REMOTE_ADDRESS":                     {commandOnly, noArgs},
	"DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT":        {paramsOptional, maskArgs},
	"DOWNSTREAM_REMOTE_PORT":                        {commandOnly, noArgs},
	"DOWNSTREAM_DIRECT_REMOTE_ADDRESS":              {commandOnly, noArgs},
	"DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT": {paramsOptional, maskArgs},
	"DOWNSTREAM_DIRECT_REMOTE_PORT":                 {commandOnly, noArgs},
	"DOWNSTREAM_LOCAL_ADDRESS":                      {commandOnly, noArgs},
	"DOWNSTREAM_LOCAL_ADDRESS_WITHOUT_PORT":         {paramsOptional, maskArgs},
	"DOWNSTREAM_LOCAL_PORT":                         {commandOnly, noArgs},
	"DOWNSTREAM_DIRECT_LOCAL_ADDRESS":               {commandOnly, noArgs},
	"DOWNSTREAM_DIRECT_LOCAL_ADDRESS_WITHOUT_PORT":  {paramsOptional, maskArgs},
	"DOWNSTREAM_DIRECT_LOCAL_PORT":                  {commandOnly, noArgs},
	"CONNECTION_ID":                                 {commandOnly, noArgs},

	"ROUTE_NAME":           {commandOnly, noArgs},
	"VIRTUAL_CLUSTER_NAME": {commandOnly, noArgs},
	"HOSTNAME":             {commandOnly, noArgs},
	"UNIQUE_ID":            {commandOnly, noArgs},
	"STREAM_ID":            {commandOnly, noArgs},
	"FILTER_STATE":         {paramsOptional | lengthAllowed, filterStateArgs},
	"DYNAMIC_METADATA":     {paramsRequired | lengthAllowed, metadataArgs},
	"ENVIRONMENT":          {paramsRequired | lengthAllowed, rawArg},

	"LOCAL_REPLY_BODY":        {commandOnly, noArgs},
	"ACCESS_LOG_TYPE":         {commandOnly, noArgs},
	"REQUEST_HEADERS_BYTES":   {commandOnly, noArgs},
	"RESPONSE_HEADERS_BYTES":  {commandOnly, noArgs},
	"RESPONSE_TRAILERS_BYTES": {commandOnly, noArgs},
	"QUERY_PARAM":             {paramsRequired | lengthAllowed, rawArg},
	"PATH":                    {paramsOptional | lengthAllowed, pathArgs},
}

// envoyOnlyCommands are command operators Envoy v1.39 has and moe-host cannot evaluate (TLS,
// byte meters, upstream connection details, tracing, ...): refused as not supported, not as
// unknown.
var envoyOnlyCommands = map[string]bool{
	"REQUEST_TX_DURATION": true, "DOWNSTREAM_HANDSHAKE_DURATION": true, "ROUNDTRIP_DURATION": true,
	"BYTES_RETRANSMITTED": true, "PACKETS_RETRANSMITTED": true, "UPSTREAM_WIRE_BYTES_RECEIVED": true,
	"UPSTREAM_HEADER_BYTES_RECEIVED": true, "UPSTREAM_DECOMPRESSED_HEADER_BYTES_RECEIVED": true,
	"DOWNSTREAM_WIRE_BYTES_RECEIVED": true, "DOWNSTREAM_HEADER_BYTES_RECEIVED": true,
	"DOWNSTREAM_DECOMPRESSED_HEADER_BYTES_RECEIVED": true, "CONNECTION_TERMINATION_DETAILS": true,
	"UPSTREAM_WIRE_BYTES_SENT": true, "UPSTREAM_HEADER_BYTES_SENT": true, "UPSTREAM_DECOMPRESSED_HEADER_BYTES_SENT": true,
	"DOWNSTREAM_WIRE_BYTES_SENT": true, "DOWNSTREAM_HEADER_BYTES_SENT": true, "DOWNSTREAM_DECOMPRESSED_HEADER_BYTES_SENT": true,
	"COMMON_DURATION": true, "UPSTREAM_HOST_NAMES_ATTEMPTED": true, "UPSTREAM_HOST_NAMES_ATTEMPTED_WITHOUT_PORT": true,
	"UPSTREAM_CONNECTION_ID": true, "UPSTREAM_CONNECTION_IDS_ATTEMPTED": true, "UPSTREAM_LOCAL_ADDRESS": true,
	"UPSTREAM_LOCAL_ADDRESS_WITHOUT_PORT": true, "UPSTREAM_LOCAL_PORT": true, "UPSTREAM_REMOTE_ADDRESS_ENDPOINT_ID": true,
	"UPSTREAM_TLS_CIPHER": true, "UPSTREAM_TLS_GROUP": true, "UPSTREAM_TLS_VERSION": true, "UPSTREAM_TLS_SESSION_ID": true,
	"UPSTREAM_SERVER_NAME": true, "UPSTREAM_PEER_ISSUER": true, "UPSTREAM_PEER_CERT": true, "UPSTREAM_PEER_SUBJECT": true,
	"DOWNSTREAM_DETECTED_CLOSE_TYPE": true, "DOWNSTREAM_LOCAL_ADDRESS_ENDPOINT_ID": true,
	"DOWNSTREAM_DIRECT_LOCAL_ADDRESS_ENDPOINT_ID": true, "REQUESTED_SERVER_NAME": true, "UPSTREAM_PEER_URI_SAN": true,
	"UPSTREAM_PEER_DNS_SAN": true, "UPSTREAM_PEER_IP_SAN": true, "UPSTREAM_LOCAL_URI_SAN": true, "UPSTREAM_LOCAL_DNS_SAN": true,
	"UPSTREAM_LOCAL_IP_SAN": true, "DOWNSTREAM_PEER_URI_SAN": true, "DOWNSTREAM_PEER_DNS_SAN": true,
	"DOWNSTREAM_PEER_IP_SAN": true, "DOWNSTREAM_PEER_EMAIL_SAN": true, "DOWNSTREAM_PEER_OTHERNAME_SAN": true,
	"DOWNSTREAM_LOCAL_URI_SAN": true, "DOWNSTREAM_LOCAL_DNS_SAN": true, "DOWNSTREAM_LOCAL_IP_SAN": true,
	"DOWNSTREAM_LOCAL_EMAIL_SAN": true, "DOWNSTREAM_LOCAL_OTHERNAME_SAN": true, "DOWNSTREAM_PEER_SUBJECT": true,
	"DOWNSTREAM_LOCAL_SUBJECT": true, "DOWNSTREAM_TLS_SESSION_ID": true, "DOWNSTREAM_TLS_CIPHER": true,
	"DOWNSTREAM_TLS_GROUP": true, "DOWNSTREAM_TLS_VERSION": true, "DOWNSTREAM_PEER_SERIAL": true,
	"DOWNSTREAM_PEER_CHAIN_SERIALS": true, "DOWNSTREAM_PEER_ISSUER": true, "DOWNSTREAM_PEER_ISSUER_SERIAL": true,
	"DOWNSTREAM_PEER_CERT": true, "DOWNSTREAM_TRANSPORT_FAILURE_REASON": true, "DOWNSTREAM_LOCAL_CLOSE_REASON": true,
	"UPSTREAM_DETECTED_CLOSE_TYPE": true, "UPSTREAM_LOCAL_CLOSE_REASON": true, "FILTER_CHAIN_NAME": true,
	"CLUSTER_METADATA": true, "UPSTREAM_METADATA": true, "UPSTREAM_FILTER_STATE": true,
	"DOWNSTREAM_PEER_CERT_V_START": true, "DOWNSTREAM_PEER_CERT_V_END": true, "UPSTREAM_PEER_CERT_V_START": true,
	"UPSTREAM_PEER_CERT_V_END": true, "UPSTREAM_CONNECTION_POOL_READY_DURATION": true, "TRACE_ID": true,
	"SPAN_ID": true, "QUERY_PARAMS": true, "COALESCE": true, "GRPC_STATUS": true, "GRPC_STATUS_NUMBER": true,
}

// parseFormat is SubstitutionFormatParser::parse for format. The error is Envoy's message (or
// moe-host's refusal); Envoy rejects the whole config on it.
func parseFormat(format string) ([]bootstrap.FormatToken, error) {
	var out []bootstrap.FormatToken
	var cur strings.Builder
	for pos := 0; pos < len(format); {
		if format[pos] != '%' {
			cur.WriteByte(format[pos])
			pos++
			continue
		}
		if pos+1 < len(format) && format[pos+1] == '%' {
			cur.WriteByte('%')
			pos += 2
			continue
		}
		if cur.Len() > 0 {
			out = append(out, bootstrap.FormatToken{Text: cur.String()})
			cur.Reset()
		}
		m := commandRE.FindStringSubmatchIndex(format[pos:])
		if m == nil {
			return nil, fmt.Errorf("Incorrect configuration: %s. Couldn't find valid command at position %d", format, pos)
		}
		name := format[pos+m[2] : pos+m[3]]
		sub := ""
		if m[4] >= 0 {
			sub = format[pos+m[4] : pos+m[5]]
		}
		var maxLen *uint64
		if m[6] >= 0 {
			n, err := strconv.ParseUint(format[pos+m[6]:pos+m[7]], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("Incorrect configuration: %s. Couldn't find valid command at position %d", format, pos)
			}
			maxLen = &n
		}
		cmd, ok := supportedCommands[name]
		if !ok {
			if envoyOnlyCommands[name] {
				return nil, fmt.Errorf("command %%%s%% is not supported by moe-host", name)
			}
			return nil, fmt.Errorf("Not supported field in StreamInfo: %s", name)
		}
		// CommandSyntaxChecker::verifySyntax.
		switch {
		case cmd.syn == commandOnly && (sub != "" || maxLen != nil):
			return nil, fmt.Errorf("%s does not take any parameters or length", name)
		case cmd.syn&paramsRequired != 0 && sub == "":
			return nil, fmt.Errorf("%s requires parameters", name)
		case cmd.syn&lengthAllowed == 0 && maxLen != nil:
			return nil, fmt.Errorf("%s does not allow length to be specified.", name)
		}
		args, err := cmd.args(sub)
		if err != nil {
			return nil, err
		}
		out = append(out, bootstrap.FormatToken{Command: name, Args: args, MaxLength: maxLen})
		pos += m[1]
	}
	if cur.Len() > 0 || format == "" {
		out = append(out, bootstrap.FormatToken{Text: cur.String()})
	}
	return out, nil
}

// textFormat compiles a text format, reporting a problem at p.
func (c *compiler) textFormat(p ypath.Path, format string, omitEmpty bool) bootstrap.Format {
	toks, err := parseFormat(format)
	if err != nil {
		c.errs.Addf(p, "%v", err)
	}
	return bootstrap.Format{Kind: bootstrap.FormatText, OmitEmptyValues: omitEmpty, Text: toks, JSON: []bootstrap.FormatJSONPiece{}}
}

// jsonFormat is JsonFormatBuilder::fromStruct + JsonFormatterImpl::create: the struct's keys
// sorted, raw JSON for everything but strings holding a '%', which become templates.
func (c *compiler) jsonFormat(p ypath.Path, st *structpb.Struct, omitEmpty bool) bootstrap.Format {
	b := &jsonBuilder{c: c, p: p}
	b.object(st.GetFields())
	b.flush()
	return bootstrap.Format{Kind: bootstrap.FormatJSON, OmitEmptyValues: omitEmpty, Text: []bootstrap.FormatToken{}, JSON: b.pieces}
}

type jsonBuilder struct {
	c      *compiler
	p      ypath.Path
	raw    strings.Builder
	pieces []bootstrap.FormatJSONPiece
}

func (b *jsonBuilder) flush() {
	s := b.raw.String()
	b.pieces = append(b.pieces, bootstrap.FormatJSONPiece{Raw: &s})
	b.raw.Reset()
}

func (b *jsonBuilder) object(fields map[string]*structpb.Value) {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b.raw.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.raw.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.raw.Write(kb)
		b.raw.WriteByte(':')
		b.value(fields[k])
	}
	b.raw.WriteByte('}')
}

func (b *jsonBuilder) value(v *structpb.Value) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		// JsonStringSerializer::addNumber: NaN is null, otherwise the shortest representation.
		if math.IsNaN(k.NumberValue) || math.IsInf(k.NumberValue, 0) {
			b.raw.WriteString("null")
		} else {
			b.raw.WriteString(strconv.FormatFloat(k.NumberValue, 'g', -1, 64))
		}
	case *structpb.Value_StringValue:
		if !strings.Contains(k.StringValue, "%") {
			sb, _ := json.Marshal(k.StringValue)
			b.raw.Write(sb)
			return
		}
		b.flush()
		toks, err := parseFormat(k.StringValue)
		if err != nil {
			b.c.errs.Addf(b.p, "%v", err)
		}
		b.pieces = append(b.pieces, bootstrap.FormatJSONPiece{Template: toks})
	case *structpb.Value_BoolValue:
		b.raw.WriteString(strconv.FormatBool(k.BoolValue))
	case *structpb.Value_StructValue:
		b.object(k.StructValue.GetFields())
	case *structpb.Value_ListValue:
		b.raw.WriteByte('[')
		for i, e := range k.ListValue.GetValues() {
			if i > 0 {
				b.raw.WriteByte(',')
			}
			b.value(e)
		}
		b.raw.WriteByte(']')
	default:
		b.raw.WriteString("null")
	}
}
