package redisclient

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/config"
)

func decode(t *testing.T, raw string) (*Config, error) {
	t.Helper()
	c := DefaultConfig()
	if err := config.DecodeStrict([]byte(raw), &c); err != nil {
		return nil, err
	}
	return &c, c.Check("redis")
}

func TestCheckNamesTheField(t *testing.T) {
	for _, tc := range []struct{ name, raw, field, reason string }{
		{"addrs missing", `{}`, "redis.addrs", "is required"},
		{"addr without port", `{"addrs":["localhost"]}`, "redis.addrs[0]", `must be "host:port", got "localhost"`},
		{"addr without host", `{"addrs":[":6379"]}`, "redis.addrs[0]", "missing host"},
		{"addr bad port", `{"addrs":["a:1","h:99999"]}`, "redis.addrs[1]", `bad port "99999"`},
		{"timeout zero", `{"addrs":["a:1"],"timeout":"0s"}`, "redis.timeout", "must be between 1ms and 10s, got 0s"},
		{"timeout too long", `{"addrs":["a:1"],"timeout":"11s"}`, "redis.timeout", "between 1ms and 10s"},
		{"dial timeout", `{"addrs":["a:1"],"dial_timeout":"2m"}`, "redis.dial_timeout", "between 1ms and 1m0s"},
		{"db negative", `{"addrs":["a:1"],"db":-1}`, "redis.db", "between 0 and"},
		{"db in cluster", `{"addrs":["a:1","b:2"],"db":2}`, "redis.db", "must be 0 in cluster mode"},
		{"cluster and sentinel", `{"addrs":["a:1"],"cluster":true,"master_name":"m"}`, "redis.cluster", "cannot be combined with master_name"},
		{"pool size", `{"addrs":["a:1"],"pool_size":10001}`, "redis.pool_size", "between 0 and 10000"},
		{"idle above pool", `{"addrs":["a:1"],"pool_size":4,"min_idle_conns":5}`, "redis.min_idle_conns", "between 0 and 4, got 5"},
		{"retries", `{"addrs":["a:1"],"max_retries":11}`, "redis.max_retries", "between 0 and 10"},
		{"ca file missing", `{"addrs":["a:1"],"tls":{"ca_file":"/nonexistent/ca.pem"}}`, "redis.tls.ca_file", "no such file"},
		{"cert without key", `{"addrs":["a:1"],"tls":{"cert_file":"/x.pem"}}`, "redis.tls.cert_file", "cert_file and key_file go together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decode(t, tc.raw)
			var fe *api.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a FieldError", err)
			}
			if fe.Field != tc.field || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q, want field %s and %q", err, tc.field, tc.reason)
			}
		})
	}
}

func TestCheckReadsTLSFiles(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := decode(t, `{"addrs":["a:1"],"tls":{"ca_file":"`+ca+`"}}`); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Fatalf("bad CA file: %v", err)
	}
	c, err := decode(t, `{"addrs":["a:1"],"tls":{"server_name":"redis.internal"}}`)
	if err != nil {
		t.Fatal(err)
	}
	if o := c.options(); o.TLSConfig == nil || o.TLSConfig.ServerName != "redis.internal" || o.TLSConfig.MinVersion == 0 {
		t.Fatalf("TLS options: %+v", o.TLSConfig)
	}
}

func TestDefaultsAndOptions(t *testing.T) {
	c, err := decode(t, `{"addrs":["a:1"]}`)
	if err != nil {
		t.Fatal(err)
	}
	o := c.options()
	if c.Timeout.D() != 50*time.Millisecond || c.DialTimeout.D() != time.Second || c.MaxRetries != 1 {
		t.Errorf("defaults: %+v", c)
	}
	if o.MaxRetries != 1 || o.ReadTimeout != 50*time.Millisecond || o.WriteTimeout != 50*time.Millisecond ||
		o.PoolTimeout != 50*time.Millisecond || !o.ContextTimeoutEnabled || o.DialerRetries != 1 ||
		o.Protocol != 2 || !o.DisableIdentity || o.TLSConfig != nil {
		t.Errorf("options: %+v", o)
	}
	c.MaxRetries = 0
	if o := c.options(); o.MaxRetries != -1 {
		t.Errorf("max_retries 0 must mean none for go-redis (-1), got %d", o.MaxRetries)
	}
}

func TestIsCluster(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want bool
	}{
		{Config{Addrs: []string{"a:1"}}, false},
		{Config{Addrs: []string{"a:1"}, Cluster: true}, true},
		{Config{Addrs: []string{"a:1", "b:1"}}, true},
		{Config{Addrs: []string{"a:1", "b:1"}, MasterName: "m"}, false},
	} {
		if got := tc.c.IsCluster(); got != tc.want {
			t.Errorf("%+v: IsCluster %v, want %v", tc.c, got, tc.want)
		}
	}
}

func TestStringAndErrorsHideCredentials(t *testing.T) {
	c, err := decode(t, `{"addrs":["a:1"],"username":"u","password":"secret-pw","master_name":"mymaster"}`)
	if err != nil {
		t.Fatal(err)
	}
	if s := c.String(); strings.Contains(s, "secret-pw") || !strings.Contains(s, "sentinel mymaster") {
		t.Errorf("String: %s", s)
	}
	if _, err := decode(t, `{"addrs":["a:1"],"password":"secret-pw","max_retries":99}`); err == nil || strings.Contains(err.Error(), "secret-pw") {
		t.Errorf("error: %v", err)
	}
}

func TestAcquireNeedsACheckedConfig(t *testing.T) {
	c := DefaultConfig()
	c.Addrs = []string{"127.0.0.1:1"}
	c.TLS = &TLS{ServerName: "x"} // unchecked: its TLS config was never built
	if _, _, err := Acquire(&c); !errors.Is(err, ErrNotChecked) {
		t.Fatalf("Acquire of an unchecked config: %v", err)
	}
}
