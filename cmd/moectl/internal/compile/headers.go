package compile

import (
	"encoding/json"
	"regexp"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// The header lists of route configurations, virtual hosts and routes
// (source/common/router/header_parser.cc HeaderParser::configure): each added value is a
// substitution format with omit_empty_values (a command without a value gives ""), an entry
// whose value comes out empty is skipped unless keep_empty_value.

// headerLists are the four lists of one level.
type headerLists struct {
	requestAdd     []*corev3.HeaderValueOption
	requestRemove  []string
	responseAdd    []*corev3.HeaderValueOption
	responseRemove []string
}

func (c *compiler) headerMutations(p ypath.Path, l headerLists) bootstrap.HeaderMutations {
	return bootstrap.HeaderMutations{
		RequestHeadersToAdd:     c.headersToAdd(p.Field("request_headers_to_add"), l.requestAdd),
		RequestHeadersToRemove:  c.headersToRemove(p.Field("request_headers_to_remove"), l.requestRemove),
		ResponseHeadersToAdd:    c.headersToAdd(p.Field("response_headers_to_add"), l.responseAdd),
		ResponseHeadersToRemove: c.headersToRemove(p.Field("response_headers_to_remove"), l.responseRemove),
	}
}

// HeaderUtility::isModifiableHeader / isRemovableHeader: no ':'-prefixed names, not host.
func modifiableHeader(k string) bool {
	return (k == "" || k[0] != ':') && !strings.EqualFold(k, "host")
}

func (c *compiler) headersToAdd(p ypath.Path, opts []*corev3.HeaderValueOption) []bootstrap.HeaderToAdd {
	out := []bootstrap.HeaderToAdd{}
	for i, o := range opts {
		op := p.Index(i)
		c.only(op, o, "header", "append", "append_action", "keep_empty_value")
		h := o.GetHeader()
		hp := op.Field("header")
		c.only(hp, h, "key", "value")
		if !modifiableHeader(h.GetKey()) {
			c.errs.Addf(hp.Field("key"), ":-prefixed or host headers may not be modified")
		}
		// HeadersToAddEntry: the deprecated append, when set, decides, and may not be combined
		// with a non-default append_action.
		action := o.GetAppendAction()
		if o.GetAppend() != nil {
			if action != corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD {
				c.errs.Addf(op, "Both append and append_action are set and it's not allowed")
			}
			if o.GetAppend().GetValue() {
				action = corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD
			} else {
				action = corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD
			}
		}
		value := translatePerRequestState(translateMetadataFormat(h.GetValue()))
		out = append(out, bootstrap.HeaderToAdd{
			Key:            strings.ToLower(h.GetKey()),
			Value:          c.textFormat(hp.Field("value"), value, true),
			AppendAction:   action.String(),
			KeepEmptyValue: o.GetKeepEmptyValue(),
		})
	}
	return out
}

func (c *compiler) headersToRemove(p ypath.Path, names []string) []string {
	out := []string{}
	for i, n := range names {
		if !modifiableHeader(n) {
			c.errs.Addf(p.Index(i), ":-prefixed or host headers may not be removed")
		}
		out = append(out, strings.ToLower(n))
	}
	return out
}

// The legacy header formats Envoy v1.39 still translates (header_parser_utils.cc; runtime guard
// envoy.reloadable_features.remove_legacy_route_formatter is off by default).
var (
	metadataTranslatorRE   = regexp.MustCompile(`%(UPSTREAM|DYNAMIC)_METADATA\(\s*(\[(?:.|\r?\n)+?\]\s*)\)%`)
	perRequestTranslatorRE = regexp.MustCompile(`%PER_REQUEST_STATE\((.+?)\)%`)
)

// translateMetadataFormat: %DYNAMIC_METADATA(["a", "b"])% -> %DYNAMIC_METADATA(a:b)%; a value
// that is not a non-empty JSON array of strings is left as it is.
func translateMetadataFormat(v string) string {
	for {
		m := metadataTranslatorRE.FindStringSubmatchIndex(v)
		if m == nil {
			return v
		}
		var parts []string
		if err := json.Unmarshal([]byte(v[m[4]:m[5]]), &parts); err != nil || len(parts) == 0 {
			return v
		}
		v = strings.ReplaceAll(v, v[m[0]:m[1]], "%"+v[m[2]:m[3]]+"_METADATA("+strings.Join(parts, ":")+")%")
	}
}

// translatePerRequestState: %PER_REQUEST_STATE(key)% -> %FILTER_STATE(key:PLAIN)%.
func translatePerRequestState(v string) string {
	for {
		m := perRequestTranslatorRE.FindStringSubmatchIndex(v)
		if m == nil {
			return v
		}
		v = strings.ReplaceAll(v, v[m[0]:m[1]], "%FILTER_STATE("+v[m[2]:m[3]]+":PLAIN)%")
	}
}
