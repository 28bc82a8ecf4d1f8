package compile

import (
	"testing"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
)

func TestHeaderMatcherForms(t *testing.T) {
	cases := []struct {
		name    string
		matcher string
		want    bootstrap.HeaderMatcher
	}{
		{"name only means present", "{name: x}", bootstrap.HeaderMatcher{Name: "x", Kind: "present", Present: true}},
		{"present_match false", "{name: x, present_match: false}", bootstrap.HeaderMatcher{Name: "x", Kind: "present", Present: false}},
		{"present_match inverted", "{name: x, present_match: true, invert_match: true}", bootstrap.HeaderMatcher{Name: "x", Kind: "present", Present: true, Invert: true}},
		{"legacy exact_match", "{name: x, exact_match: a}", bootstrap.HeaderMatcher{Name: "x", Kind: "exact", Value: "a", Present: true}},
		{"legacy exact_match empty matches any value", "{name: x, exact_match: ''}", bootstrap.HeaderMatcher{Name: "x", Kind: "prefix", Value: "", Present: true}},
		{"string_match exact empty stays exact", "{name: x, string_match: {exact: ''}}", bootstrap.HeaderMatcher{Name: "x", Kind: "exact", Value: "", Present: true}},
		{"range_match", "{name: x, range_match: {start: -10, end: 9223372036854775807}}", bootstrap.HeaderMatcher{Name: "x", Kind: "range", Present: true, RangeStart: -10, RangeEnd: 9223372036854775807}},
		{"treat_missing_header_as_empty", "{name: x, string_match: {exact: ''}, treat_missing_header_as_empty: true}", bootstrap.HeaderMatcher{Name: "x", Kind: "exact", Present: true, TreatMissingAsEmpty: true}},
		{"legacy prefix_match", "{name: x, prefix_match: a}", bootstrap.HeaderMatcher{Name: "x", Kind: "prefix", Value: "a", Present: true}},
		{"legacy suffix_match", "{name: x, suffix_match: a}", bootstrap.HeaderMatcher{Name: "x", Kind: "suffix", Value: "a", Present: true}},
		{"legacy contains_match", "{name: x, contains_match: a}", bootstrap.HeaderMatcher{Name: "x", Kind: "contains", Value: "a", Present: true}},
		{"legacy safe_regex_match", "{name: x, safe_regex_match: {regex: 'a+'}}", bootstrap.HeaderMatcher{Name: "x", Kind: "safe_regex", Value: "a+", Present: true}},
		{"string_match exact ignoring case", "{name: x, string_match: {exact: a, ignore_case: true}}", bootstrap.HeaderMatcher{Name: "x", Kind: "exact", Value: "a", Present: true, IgnoreCase: true}},
		{"string_match prefix", "{name: x, string_match: {prefix: a}}", bootstrap.HeaderMatcher{Name: "x", Kind: "prefix", Value: "a", Present: true}},
		{"string_match suffix", "{name: x, string_match: {suffix: a}}", bootstrap.HeaderMatcher{Name: "x", Kind: "suffix", Value: "a", Present: true}},
		{"string_match contains inverted", "{name: x, string_match: {contains: a}, invert_match: true}", bootstrap.HeaderMatcher{Name: "x", Kind: "contains", Value: "a", Present: true, Invert: true}},
		{"string_match safe_regex drops ignore_case as Envoy does", "{name: x, string_match: {safe_regex: {regex: 'a.c'}, ignore_case: true}}", bootstrap.HeaderMatcher{Name: "x", Kind: "safe_regex", Value: "a.c", Present: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := compileString(t, minimal(t, map[string]string{"MATCH": "headers: [" + c.matcher + "]"}))
			if err != nil {
				t.Fatal(err)
			}
			got := res.Bootstrap.Listeners[0].HCM.RouteConfig.VirtualHosts[0].Routes[0].Match.Headers
			if len(got) != 1 || got[0] != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestRouteMatchKinds(t *testing.T) {
	cases := []struct {
		name     string
		match    string
		want     bootstrap.RouteMatch
		warnings int
	}{
		{"prefix", "{prefix: /a}", bootstrap.RouteMatch{Kind: "prefix", Value: "/a", CaseSensitive: true}, 0},
		{"path case insensitive", "{path: /a, case_sensitive: false}", bootstrap.RouteMatch{Kind: "path", Value: "/a", CaseSensitive: false}, 0},
		{"safe_regex", "{safe_regex: {regex: '/a/[0-9]+'}}", bootstrap.RouteMatch{Kind: "safe_regex", Value: "/a/[0-9]+", CaseSensitive: true}, 0},
		{"safe_regex ignores case_sensitive like Envoy", "{safe_regex: {regex: '/a'}, case_sensitive: false}", bootstrap.RouteMatch{Kind: "safe_regex", Value: "/a", CaseSensitive: true}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			y := minimal(t, map[string]string{"ROUTES": "- {match: " + c.match + ", direct_response: {status: 204}}"})
			res, err := compileString(t, y)
			if err != nil {
				t.Fatal(err)
			}
			got := res.Bootstrap.Listeners[0].HCM.RouteConfig.VirtualHosts[0].Routes[1].Match
			c.want.Headers = []bootstrap.HeaderMatcher{}
			if !jsonEqual(t, got, c.want) || len(res.Warnings) != c.warnings {
				t.Fatalf("got %+v (warnings %q), want %+v", got, res.Warnings, c.want)
			}
		})
	}
}

func TestRegexProblems(t *testing.T) {
	cases := []struct {
		pattern string
		ok      bool
	}{
		{`/v1/[a-z]+/\d+`, true},
		{`(?:a|b)*c$`, true},
		{`[[:alpha:]]+`, true},
		{`[\]\[(?i)]`, true}, // brackets and (?i) inside a class are literals
		{`\(?i\)`, true},
		{`(?i)abc`, false},
		{`(?P<id>\d+)`, false},
		{`(?<id>\d+)`, false},
		{`\Aabc\z`, false},
		{`\pL+`, false},
		{`\p{Greek}`, false},
		{`[\PL]`, false},
		{`\x{263a}`, false},
		{`\Qa.b\E`, false},
		{`[[:word:]]`, false},
		{`[[:^alpha:]]`, false},
		{`(a`, false},     // invalid RE2
		{`a(?=b)`, false}, // lookahead: not RE2
	}
	for _, c := range cases {
		t.Run(c.pattern, func(t *testing.T) {
			problem := regexProblem(c.pattern)
			if (problem == "") != c.ok {
				t.Fatalf("regexProblem(%q) = %q, want ok=%v", c.pattern, problem, c.ok)
			}
		})
	}
}

func TestRouteConfigChecks(t *testing.T) {
	cases := []struct {
		name     string
		snippets map[string]string
		want     string
	}{
		{"unknown cluster", map[string]string{"ROUTES": "- {match: {prefix: /x}, route: {cluster: nowhere}}"},
			vhPath + `.routes[1].route.cluster: unknown cluster "nowhere" (not in static_resources.clusters)`},
		{"unknown weighted cluster", map[string]string{"ROUTES": "- {match: {prefix: /x}, route: {weighted_clusters: {clusters: [{name: nowhere, weight: 1}]}}}"},
			vhPath + `.routes[1].route.weighted_clusters.clusters[0].name: unknown cluster "nowhere" (not in static_resources.clusters)`},
		{"weights sum to zero", map[string]string{"ROUTES": "- {match: {prefix: /x}, route: {weighted_clusters: {clusters: [{name: backend, weight: 0}]}}}"},
			vhPath + `.routes[1].route.weighted_clusters: the sum of weights must be greater than 0`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := compileString(t, minimal(t, c.snippets))
			wantError(t, err, c.want)
		})
	}
}

func TestValidateClustersFalseAllowsUnknownClusters(t *testing.T) {
	_, err := compileString(t, minimal(t, map[string]string{
		"ROUTE_CONFIG": "validate_clusters: false",
		"ROUTES":       "- {match: {prefix: /x}, route: {cluster: made-at-runtime}}",
	}))
	if err != nil {
		t.Fatal(err)
	}
}

func TestDuplicateDomainsAreRefused(t *testing.T) {
	y := replaceOnce(t, minimal(t, nil), `            virtual_hosts:
`, `            virtual_hosts:
            - name: other
              domains: ["A.example.com"]
            - name: other2
              domains: ["a.example.com"]
`)
	_, err := compileString(t, y)
	wantError(t, err, rcPath+`.virtual_hosts[1].domains[0]: domain "a.example.com" is already used by virtual_hosts[0]`)
}
