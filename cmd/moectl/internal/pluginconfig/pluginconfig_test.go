package pluginconfig

import (
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func target(t *testing.T, plugin, js string, perRoute bool) Target {
	t.Helper()
	a, err := config.TypedStruct(js)
	if err != nil {
		t.Fatal(err)
	}
	return Target{LibraryID: LibraryID, PluginName: plugin, PerRoute: perRoute, Config: a}
}

func full(tgs ...Target) [][]Problem {
	res := make([][]Problem, len(tgs))
	for i, tg := range tgs {
		res[i] = Check(tg, true)
	}
	return res
}

func ats(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.At + " => " + p.Message + "\n")
	}
	return b.String()
}

func wantProblems(t *testing.T, got []Problem, want ...string) {
	t.Helper()
	s := ats(got)
	if len(got) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(got), len(want), s)
	}
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("no problem %q in:\n%s", w, s)
		}
	}
}

// Every broken part of a chain is reported, each at its place in the config.
func TestEveryProblemOfAChain(t *testing.T) {
	tg := target(t, "moe", `{"plugins": [
		{"name": "key-auth", "config": {"header": "x-api-key"}},
		{"name": "limit-req", "config": {"rate": 0}},
		{"name": "consumer-restriction", "config": {"rules": [{"consumers": ["*"]}]}}],
	  "consumers": [
		{"name": "alice", "auth": {"key-auth": {"keys": []}}},
		{"name": "", "auth": {"key-auth": {"keys": ["bob-key-123"]}}},
		{"name": "carol", "auth": {"jwt-auth": {}}}]}`, false)
	got := Check(tg, false)
	wantProblems(t, got,
		`plugins[0].config.header => invalid config of plugin "key-auth": field header: unknown field`,
		`plugins[1].config.rate => invalid config of plugin "limit-req": field rate`,
		`consumers[0].auth.key-auth.keys => invalid config of plugin "key-auth": field consumers[0].auth.key-auth.keys`,
		`consumers[1].name => `,
		`consumers[2].auth.jwt-auth => invalid config of plugin "jwt-auth": field consumers[2].auth.jwt-auth: the plugin is not in this filter's plugin list`,
	)
}

// Checks only Init makes are found by the full check, not by decode and Validate.
func TestInitChecksNeedTheFullCheck(t *testing.T) {
	short := target(t, "moe", `{"plugins": [{"name": "jwt-auth", "config": {"keys": [{"secret": "12345"}]}}]}`, false)
	none := target(t, "moe", `{"plugins": [{"name": "jwt-auth", "config": {}}]}`, false)
	single := target(t, "jwt-auth", `{}`, false)
	for _, tg := range []Target{short, none, single} {
		if ps := Check(tg, false); len(ps) != 0 {
			t.Fatalf("decode-only check found %s", ats(ps))
		}
	}
	res := full(short, none, single)
	wantProblems(t, res[0], `plugins[0].config.keys[0] => invalid config of plugin "jwt-auth": field keys[0]`)
	wantProblems(t, res[1], `plugins[0].config.keys => invalid config of plugin "jwt-auth": field keys: no key source`)
	wantProblems(t, res[2], `keys => invalid config of plugin "jwt-auth": field keys: no key source`)
}

// The full check runs Init in check-only mode in this process: jwt-auth starts no JWKS
// refresher, limit-count acquires no Redis client (which would keep idle connections), so
// nothing reaches the address, here a local listener, and nothing is left running.
func TestFullCheckStartsNothing(t *testing.T) {
	ln := fakeframework.NewListener(t)
	addr := ln.Addr()
	tg := target(t, "moe", `{"plugins": [
	  {"name": "jwt-auth", "config": {"jwks": {"url": "http://`+addr+`/jwks"}}},
	  {"name": "limit-count", "config": {"count": 10, "time_window": "1s", "redis": {"addrs": ["`+addr+`"], "min_idle_conns": 2}}}]}`, false)
	var res [][]Problem
	fakeframework.StartsNoGoroutine(t, func() { res = full(tg) })
	if len(res[0]) != 0 {
		t.Fatalf("problems: %s", ats(res[0]))
	}
	ln.WantNoConnection(t, 300*time.Millisecond)
}

func TestPerRouteEntriesAreCheckedOnTheirOwn(t *testing.T) {
	tg := target(t, "moe", `{"plugins": [{"name": "key-auth", "disabled": true}, {"name": "limit-req", "config": {"rate": -1}},
		{"name": "ip-restriction", "config": {"allow": ["nope"]}}]}`, true)
	wantProblems(t, Check(tg, false),
		`plugins[1].config.rate => `,
		`plugins[2].config.allow[0] => `)
}
