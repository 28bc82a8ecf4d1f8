package compile

import (
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

func (c *compiler) routeMatch(p ypath.Path, m *routev3.RouteMatch) bootstrap.RouteMatch {
	c.only(p, m, "prefix", "path", "safe_regex", "case_sensitive", "headers")
	out := bootstrap.RouteMatch{
		CaseSensitive: m.GetCaseSensitive() == nil || m.GetCaseSensitive().GetValue(),
		Headers:       []bootstrap.HeaderMatcher{},
	}
	switch ps := m.GetPathSpecifier().(type) {
	case *routev3.RouteMatch_Prefix:
		out.Kind, out.Value = bootstrap.MatchPrefix, ps.Prefix
	case *routev3.RouteMatch_Path:
		out.Kind, out.Value = bootstrap.MatchPath, ps.Path
	case *routev3.RouteMatch_SafeRegex:
		out.Kind, out.Value = bootstrap.MatchSafeRegex, c.regex(p.Field("safe_regex"), ps.SafeRegex)
		if !out.CaseSensitive {
			// Envoy documents case_sensitive as ignored for safe_regex; emit what Envoy does.
			c.warnf(p.Field("case_sensitive"), "ignored by Envoy for safe_regex matching; spell case-insensitivity out in the pattern, e.g. [Aa]")
			out.CaseSensitive = true
		}
	}
	for i, h := range m.GetHeaders() {
		out.Headers = append(out.Headers, c.headerMatcher(p.Field("headers").Index(i), h))
	}
	return out
}

// headerMatcher maps both the string_match form and the deprecated direct forms onto one kind.
func (c *compiler) headerMatcher(p ypath.Path, h *routev3.HeaderMatcher) bootstrap.HeaderMatcher {
	c.only(p, h, "name", "exact_match", "safe_regex_match", "range_match", "present_match", "prefix_match",
		"suffix_match", "contains_match", "string_match", "invert_match", "treat_missing_header_as_empty")
	out := bootstrap.HeaderMatcher{Name: h.GetName(), Kind: bootstrap.HeaderPresent, Present: true, Invert: h.GetInvertMatch(),
		TreatMissingAsEmpty: h.GetTreatMissingHeaderAsEmpty()}
	switch s := h.GetHeaderMatchSpecifier().(type) {
	case nil:
		// No specifier: Envoy matches when the header is present.
	case *routev3.HeaderMatcher_ExactMatch:
		out.Kind, out.Value = bootstrap.HeaderExact, s.ExactMatch
		if s.ExactMatch == "" {
			// The deprecated exact_match "" matches any value (HeaderDataExactMatch,
			// source/common/http/header_utility.h: expected_value_.empty() || ...), unlike
			// string_match's exact "", which matches only an empty value. prefix "" is that.
			out.Kind = bootstrap.HeaderPrefix
		}
	case *routev3.HeaderMatcher_RangeMatch:
		rp := p.Field("range_match")
		c.only(rp, s.RangeMatch, "start", "end")
		out.Kind, out.RangeStart, out.RangeEnd = bootstrap.HeaderRange, s.RangeMatch.GetStart(), s.RangeMatch.GetEnd()
	case *routev3.HeaderMatcher_PrefixMatch:
		out.Kind, out.Value = bootstrap.HeaderPrefix, s.PrefixMatch
	case *routev3.HeaderMatcher_SuffixMatch:
		out.Kind, out.Value = bootstrap.HeaderSuffix, s.SuffixMatch
	case *routev3.HeaderMatcher_ContainsMatch:
		out.Kind, out.Value = bootstrap.HeaderContains, s.ContainsMatch
	case *routev3.HeaderMatcher_SafeRegexMatch:
		out.Kind, out.Value = bootstrap.HeaderSafeRegex, c.regex(p.Field("safe_regex_match"), s.SafeRegexMatch)
	case *routev3.HeaderMatcher_PresentMatch:
		out.Present = s.PresentMatch
	case *routev3.HeaderMatcher_StringMatch:
		c.stringMatch(p.Field("string_match"), s.StringMatch, &out)
	}
	return out
}

func (c *compiler) stringMatch(p ypath.Path, sm *matcherv3.StringMatcher, out *bootstrap.HeaderMatcher) {
	c.only(p, sm, "exact", "prefix", "suffix", "safe_regex", "contains", "ignore_case")
	out.IgnoreCase = sm.GetIgnoreCase()
	switch mp := sm.GetMatchPattern().(type) {
	case *matcherv3.StringMatcher_Exact:
		out.Kind, out.Value = bootstrap.HeaderExact, mp.Exact
	case *matcherv3.StringMatcher_Prefix:
		out.Kind, out.Value = bootstrap.HeaderPrefix, mp.Prefix
	case *matcherv3.StringMatcher_Suffix:
		out.Kind, out.Value = bootstrap.HeaderSuffix, mp.Suffix
	case *matcherv3.StringMatcher_Contains:
		out.Kind, out.Value = bootstrap.HeaderContains, mp.Contains
	case *matcherv3.StringMatcher_SafeRegex:
		out.Kind, out.Value = bootstrap.HeaderSafeRegex, c.regex(p.Field("safe_regex"), mp.SafeRegex)
		// Envoy documents ignore_case as having no effect on safe_regex.
		out.IgnoreCase = false
	}
}

// regex accepts a RegexMatcher whose pattern is valid RE2 (as Envoy requires) and also means
// the same to moe-host's ECMAScript engine.
func (c *compiler) regex(p ypath.Path, rm *matcherv3.RegexMatcher) string {
	c.only(p, rm, "regex", "google_re2")
	// google_re2: {} is a common leftover of older configs; any option inside it is refused.
	c.only(p.Field("google_re2"), rm.GetGoogleRe2())
	if problem := regexProblem(rm.GetRegex()); problem != "" {
		c.errs.Addf(p.Field("regex"), "%s", problem)
	}
	return rm.GetRegex()
}
