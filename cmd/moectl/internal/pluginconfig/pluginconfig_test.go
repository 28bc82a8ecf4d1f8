package pluginconfig

import (
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/config"
)

func TestMain(m *testing.M) {
	MaybeRunChild()
	os.Exit(m.Run())
}

func target(t *testing.T, plugin, js string, perRoute bool) Target {
	t.Helper()
	a, err := config.TypedStruct(js)
	if err != nil {
		t.Fatal(err)
	}
	return Target{LibraryID: LibraryID, PluginName: plugin, PerRoute: perRoute, Config: a}
}

func full(t *testing.T, tgs ...Target) [][]Problem {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunFull(exe, tgs)
	if err != nil {
		t.Skipf("no sandbox here: %v", err)
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
	res := full(t, short, none, single)
	wantProblems(t, res[0], `plugins[0].config.keys[0] => invalid config of plugin "jwt-auth": field keys[0]`)
	wantProblems(t, res[1], `plugins[0].config.keys => invalid config of plugin "jwt-auth": field keys: no key source`)
	wantProblems(t, res[2], `keys => invalid config of plugin "jwt-auth": field keys: no key source`)
}

// The full check runs Init, which would start a JWKS fetcher and a Redis client with idle
// connections; in the sandbox neither reaches the address, here a local listener.
func TestFullCheckHasNoNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	addr := ln.Addr().String()
	tg := target(t, "moe", `{"plugins": [
	  {"name": "jwt-auth", "config": {"jwks": {"url": "http://`+addr+`/jwks"}}},
	  {"name": "limit-count", "config": {"count": 10, "time_window": "1s", "redis": {"addrs": ["`+addr+`"], "min_idle_conns": 2}}}]}`, false)
	res := full(t, tg)
	if len(res[0]) != 0 {
		t.Fatalf("problems: %s", ats(res[0]))
	}
	select {
	case <-accepted:
		t.Fatal("the full check connected to the JWKS or Redis address")
	case <-time.After(300 * time.Millisecond):
	}
}

func TestPerRouteEntriesAreCheckedOnTheirOwn(t *testing.T) {
	tg := target(t, "moe", `{"plugins": [{"name": "key-auth", "disabled": true}, {"name": "limit-req", "config": {"rate": -1}},
		{"name": "ip-restriction", "config": {"allow": ["nope"]}}]}`, true)
	wantProblems(t, Check(tg, false),
		`plugins[1].config.rate => `,
		`plugins[2].config.allow[0] => `)
}
