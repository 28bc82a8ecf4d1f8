package ypath

import "testing"

func TestParseRoundTrips(t *testing.T) {
	for _, s := range []string{
		"a",
		"a.b[0].c",
		`static_resources.listeners[0].filter_chains[0].typed_per_filter_config["envoy.filters.http.golang"].plugins_config["moe"].config`,
		"consumers[1].keys[0]",
	} {
		if got := Parse(s).String(); got != s {
			t.Errorf("Parse(%q) = %q", s, got)
		}
	}
	p := Parse(`x["a]b"].y`)
	if segs := p.Segments(); len(segs) != 3 || segs[1].Name != "a]b" {
		t.Fatalf("segments %+v", segs)
	}
	if !Parse("a.b[0].c").HasPrefix(Parse("a.b[0]")) || Parse("a.b").HasPrefix(Parse("a.c")) {
		t.Fatal("HasPrefix")
	}
}
