package sentinel

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/config"
)

func decode(raw string) (*Config, error) {
	c := newConfig().(*Config)
	if err := config.DecodeStrict([]byte(raw), c); err != nil {
		return nil, err
	}
	return c, c.Validate()
}

func TestValidateRejectsBadValuesNamingTheField(t *testing.T) {
	cases := []struct {
		name, raw, field, reason string
	}{
		{"flow threshold zero", `{"flow":[{"threshold":0}]}`, "flow[0].threshold", "must be > 0"},
		{"unknown flow behavior", `{"flow":[{"threshold":5,"behavior":"queue"}]}`, "flow[0].behavior", `must be one of reject, warm_up, throttling, warm_up_throttling, got "queue"`},
		{"warm up cold factor one", `{"flow":[{"threshold":5,"behavior":"warm_up","warm_up_cold_factor":1}]}`, "flow[0].warm_up_cold_factor", "must be at least 2, got 1"},
		{"queueing too long", `{"flow":[{"threshold":5,"behavior":"throttling","max_queueing_time":"2m"}]}`, "flow[0].max_queueing_time", "must be between 1ms and 1m0s, got 2m0s"},
		{"isolation zero", `{"isolation":[{"max_concurrency":0}]}`, "isolation[0].max_concurrency", "must be at least 1, got 0"},
		{"breaker strategy", `{"circuit_breakers":[{"strategy":"latency","threshold":0.5}]}`, "circuit_breakers[0].strategy", "must be one of slow_request_ratio, error_ratio, error_count"},
		{"breaker ratio above one", `{"circuit_breakers":[{"strategy":"error_ratio","threshold":1.5}]}`, "circuit_breakers[0].threshold", "ratio in (0, 1]"},
		{"slow breaker needs rt", `{"circuit_breakers":[{"strategy":"slow_request_ratio","threshold":0.5}]}`, "circuit_breakers[0].max_allowed_rt", "required"},
		{"hotspot needs key", `{"hotspot":[{"threshold":5}]}`, "hotspot[0].key", "required"},
		{"hotspot unknown variable", `{"hotspot":[{"key":"$nope","threshold":5}]}`, "", "unknown variable $nope"},
		{"hotspot duration fraction", `{"hotspot":[{"key":"$header_x-user","threshold":5,"duration":"1.5s"}]}`, "hotspot[0].duration", "whole seconds"},
		{"hotspot concurrency throttling", `{"hotspot":[{"key":"$header_x-user","metric":"concurrency","behavior":"throttling","threshold":5}]}`, "hotspot[0].behavior", "needs metric qps"},
		{"system metric", `{"system":[{"metric":"memory","threshold":5}]}`, "system[0].metric", "must be one of load, cpu"},
		{"system cpu above one", `{"system":[{"metric":"cpu","threshold":80}]}`, "system[0].threshold", "usage ratio"},
		{"pressure ratio", `{"pressure_test":{"system_ratio":2}}`, "pressure_test.system_ratio", "must be between 0 and 1, got 2"},
		{"pressure rule", `{"pressure_test":{"flow":[{"threshold":-1}]}}`, "pressure_test.flow[0].threshold", "must be > 0"},
		{"resource with hash", `{"flow":[{"resource":"a#b","threshold":1}]}`, "flow[0].resource", "reserved"},
		{"blocked status", `{"blocked":{"status":99}}`, "blocked.status", "must be between 200 and 599, got 99"},
		{"blocked header", `{"blocked":{"header":"x bad"}}`, "blocked.header", "invalid header name"},
		{"max resources", `{"max_resources":0}`, "max_resources", "must be between 1 and 100000, got 0"},
		{"unknown field", `{"flows":[]}`, "flows", "unknown field"},
		{"error statuses", `{"error_statuses":[42]}`, "error_statuses[0]", "must be between 100 and 599, got 42"},
		{"error status from", `{"error_status_from":1001}`, "error_status_from", "must be between 100 and 1000"},
		{"stat interval too long", `{"flow":[{"threshold":5,"stat_interval":"11m"}]}`, "flow[0].stat_interval", "must be between 1ms and 10m0s"},
		{"breaker retry timeout", `{"circuit_breakers":[{"strategy":"error_count","threshold":3,"retry_timeout":"100us"}]}`, "circuit_breakers[0].retry_timeout", "must be at least 1ms"},
		{"hotspot negative burst", `{"hotspot":[{"key":"$header_x-user","threshold":1,"burst":-1}]}`, "hotspot[0].burst", "must be at least 0, got -1"},
		{"hotspot max keys", `{"hotspot":[{"key":"$header_x-user","threshold":1,"max_keys":2000000}]}`, "hotspot[0].max_keys", "must be between 1 and 1000000"},
		{"hotspot override", `{"hotspot":[{"key":"$header_x-user","threshold":1,"overrides":{"vip":-2}}]}`, "hotspot[0].overrides.vip", "must be at least 0, got -2"},
		{"system adaptive", `{"system":[{"metric":"load","threshold":5,"adaptive":"pid"}]}`, "system[0].adaptive", `must be one of bbr, none, got "pid"`},
		{"pressure isolation", `{"pressure_test":{"isolation":[{"max_concurrency":0}]}}`, "pressure_test.isolation[0].max_concurrency", "must be at least 1"},
		{"circuit breaker status", `{"blocked":{"circuit_breaker_status":600}}`, "blocked.circuit_breaker_status", "must be between 200 and 599"},
		{"blocked content type", `{"blocked":{"content_type":"text/plain\r\nx: y"}}`, "blocked.content_type", "CR or LF"},
		{"namespace", `{"namespace":"a/b"}`, "namespace", "must not contain"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decode(tc.raw)
			if err == nil {
				t.Fatalf("accepted %s", tc.raw)
			}
			var fe *api.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a FieldError", err)
			}
			if tc.field != "" && fe.Field != tc.field {
				t.Errorf("field = %q, want %q (%v)", fe.Field, tc.field, err)
			}
			if !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %q does not say %q", err, tc.reason)
			}
		})
	}
}

func TestValidateFillsRuleDefaults(t *testing.T) {
	c, err := decode(`{
		"flow":[{"threshold":5},{"threshold":5,"behavior":"warm_up"},{"threshold":5,"behavior":"throttling"}],
		"circuit_breakers":[{"strategy":"error_count","threshold":3}],
		"hotspot":[{"key":"$header_x-user","threshold":2}],
		"system":[{"metric":"load","threshold":8},{"metric":"concurrency","threshold":100}],
		"pressure_test":{}
	}`)
	if err != nil {
		t.Fatal(err)
	}
	if c.Resource.String() != "$route_name" {
		t.Errorf("resource default = %q", c.Resource)
	}
	if f := c.Flow[0]; f.Behavior != "reject" || f.StatInterval.D() != time.Second {
		t.Errorf("flow defaults: %+v", f)
	}
	if f := c.Flow[1]; f.WarmUpPeriod.D() != 10*time.Second || f.WarmUpColdFactor != 3 {
		t.Errorf("warm-up defaults: %+v", f)
	}
	if f := c.Flow[2]; f.MaxQueueingTime.D() != 500*time.Millisecond {
		t.Errorf("throttling default: %+v", f)
	}
	if b := c.CircuitBreakers[0]; b.RetryTimeout.D() != 5*time.Second || b.MinRequestAmount != 5 || b.StatInterval.D() != time.Second {
		t.Errorf("breaker defaults: %+v", b)
	}
	if h := c.Hotspot[0]; h.Metric != "qps" || h.Behavior != "reject" || h.Duration.D() != time.Second || h.MaxKeys != 10000 {
		t.Errorf("hotspot defaults: %+v", h)
	}
	if c.System[0].Adaptive != "bbr" || c.System[1].Adaptive != "none" {
		t.Errorf("system adaptive defaults: %+v", c.System)
	}
	if p := c.PressureTest; p.Match.String() != "$header_x-pressure-test" || p.Value != "true" || p.SystemRatio != 0.8 {
		t.Errorf("pressure defaults: %+v", p)
	}
	if c.Blocked.Status != 429 || c.Blocked.CircuitBreakerStatus != 503 || c.Blocked.Header != "x-moe-sentinel-blocked" {
		t.Errorf("blocked defaults: %+v", c.Blocked)
	}
}

func TestNeedsMayBlockOnlyWithThrottling(t *testing.T) {
	cases := []struct {
		raw   string
		block bool
	}{
		{`{"flow":[{"threshold":5}]}`, false},
		{`{"flow":[{"threshold":5,"behavior":"warm_up"}]}`, false},
		{`{"flow":[{"threshold":5,"behavior":"throttling"}]}`, true},
		{`{"flow":[{"threshold":5,"behavior":"warm_up_throttling"}]}`, true},
		{`{"hotspot":[{"key":"$header_x-user","threshold":5,"behavior":"throttling"}]}`, true},
		{`{"pressure_test":{"flow":[{"threshold":5,"behavior":"throttling"}]}}`, true},
	}
	for _, tc := range cases {
		c, err := decode(tc.raw)
		if err != nil {
			t.Fatal(err)
		}
		got := c.Needs().MayBlock&api.BlockReceive != 0
		if got != tc.block {
			t.Errorf("%s: MayBlock receive = %v, want %v", tc.raw, got, tc.block)
		}
		if c.Needs().MayBlock&api.BlockSend != 0 {
			t.Errorf("%s: send must never block", tc.raw)
		}
	}
}
