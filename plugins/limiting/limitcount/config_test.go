package limitcount

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

func TestConfigRejectsBadValuesNamingTheField(t *testing.T) {
	redis := map[string]any{"addrs": []string{"127.0.0.1:6379"}}
	with := func(kv ...any) map[string]any {
		c := map[string]any{"count": 10, "time_window": "1s", "redis": redis}
		for i := 0; i+1 < len(kv); i += 2 {
			c[kv[i].(string)] = kv[i+1]
		}
		return c
	}
	redisWith := func(kv ...any) map[string]any {
		r := map[string]any{"addrs": []string{"127.0.0.1:6379"}}
		for i := 0; i+1 < len(kv); i += 2 {
			r[kv[i].(string)] = kv[i+1]
		}
		return with("redis", r)
	}
	cases := []struct {
		name   string
		config map[string]any
		want   string // field and reason
	}{
		{"count missing", map[string]any{"time_window": "1s", "redis": redis}, "field count: must be between 1 and 1099511627776, got 0"},
		{"count negative", with("count", -1), "field count: must be"},
		{"count fractional", with("count", 1.5), "count"},
		{"window missing", map[string]any{"count": 1, "redis": redis}, "field time_window: must be between 10ms and 24h0m0s, got 0s"},
		{"window too long", with("time_window", "48h"), "field time_window"},
		{"window sub-ms", with("time_window", "10.5ms"), "field time_window: must be a whole number of milliseconds"},
		{"window kind", with("window", "rolling"), `field window: must be one of fixed, sliding, got "rolling"`},
		{"key empty", with("key", " "), "field key: must be a template"},
		{"key unknown variable", with("key", "$header_x-user:$bogus"), "field key: template \"$header_x-user:$bogus\": unknown variable $bogus"},
		{"empty_key", with("empty_key", "drop"), "field empty_key"},
		{"status", with("status", 200), "field status: must be a 4xx or 5xx status, got 200"},
		{"failure_policy", with("failure_policy", "open"), `field failure_policy: must be one of fail_open, fail_closed, local, got "open"`},
		{"failure_status", with("failure_status", 302), "field failure_status"},
		{"key_prefix braces", with("key_prefix", "a{b}"), "field key_prefix: must not contain"},
		{"unknown field", with("limit", 5), "limit"},
		{"redis missing", map[string]any{"count": 1, "time_window": "1s"}, "field redis.addrs: is required"},
		{"redis addr", redisWith("addrs", []string{"localhost"}), `field redis.addrs[0]: must be "host:port", got "localhost"`},
		{"redis addr port", redisWith("addrs", []string{"127.0.0.1:6379", "h:99999"}), "field redis.addrs[1]"},
		{"redis timeout", redisWith("timeout", "0s"), "field redis.timeout: must be between 1ms and 10s"},
		{"redis db in cluster", redisWith("addrs", []string{"a:1", "b:2"}, "db", 2), "field redis.db: must be 0 in cluster mode"},
		{"redis cluster and sentinel", redisWith("cluster", true, "master_name", "m"), "field redis.cluster"},
		{"redis retries", redisWith("max_retries", 11), "field redis.max_retries"},
		{"redis unknown field", redisWith("host", "x"), "host"},
		{"redis ca_file", redisWith("tls", map[string]any{"ca_file": "/nonexistent/ca.pem"}), "field redis.tls.ca_file"},
		{"redis cert without key", redisWith("tls", map[string]any{"cert_file": "/x.pem"}), "field redis.tls.cert_file: cert_file and key_file go together"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run, err := fakeenvoy.NewPlugin(Name, tc.config)
			if err == nil {
				destroy(run)
				t.Fatalf("accepted %v", tc.config)
			}
			msg := err.Error()
			if !strings.Contains(msg, `plugin "limit-count"`) || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q, want it to name the plugin and contain %q", msg, tc.want)
			}
			if strings.Contains(msg, "secret-pw") {
				t.Errorf("error shows the password: %q", msg)
			}
			// moectl validate (Init in check-only mode) reports the same.
			p, _ := registry.Get(Name)
			raw, _ := json.Marshal(tc.config)
			if err := config.CheckPluginFull(p, raw, false); err == nil || err.Error() != msg {
				t.Errorf("checking: %v, want %q", err, msg)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	run, err := fakeenvoy.NewPlugin(Name, map[string]any{
		"count": 60, "time_window": 60, // seconds, as APISIX writes it
		"redis": map[string]any{"addrs": []string{"127.0.0.1:1"}, "password": "secret-pw"},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer destroy(run)
	c := newConfig().(*Config)
	if c.Window != "fixed" || c.Key.String() != "$remote_addr" || c.Status != 429 || !c.Headers || c.FailurePolicy != "fail_open" ||
		c.FailureStatus != 503 || c.Redis.Timeout.D().Milliseconds() != 50 || c.Redis.MaxRetries != 1 {
		t.Errorf("defaults: %+v", c)
	}
	if s := c.Redis.String(); strings.Contains(s, "pw") {
		t.Errorf("String shows credentials: %s", s)
	}
}

func TestConfigLoadsTLSFiles(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := fakeenvoy.NewPlugin(Name, map[string]any{"count": 1, "time_window": "1s",
		"redis": map[string]any{"addrs": []string{"127.0.0.1:6380"}, "tls": map[string]any{"ca_file": ca}}})
	if err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("bad CA file: %v", err)
	}
	run, err := fakeenvoy.NewPlugin(Name, map[string]any{"count": 1, "time_window": "1s",
		"redis": map[string]any{"addrs": []string{"127.0.0.1:6380"}, "tls": map[string]any{"server_name": "redis.internal"}}})
	if err != nil {
		t.Fatal(err)
	}
	destroy(run)
}
