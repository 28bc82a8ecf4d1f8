package sentinel

import (
	"strings"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// Config is the sentinel plugin's config. Every rule list is optional; a config
// without rules only counts traffic. The rule types are in rule_*.go.
type Config struct {
	// Resource names the sentinel resource of a request, rendered per request
	// from variables (default "$route_name"). Rules without "resource" apply to
	// every rendered name, each name with its own counters.
	Resource *variables.Template `json:"resource"`
	// Namespace isolates this config's resources from other configs'. Default: a
	// hash of the config, so identical configs (e.g. the same config re-sent by
	// xDS) keep their counters and breaker states while different ones never
	// share or overwrite rules. Set it to share counters on purpose.
	Namespace string `json:"namespace"`
	// MaxResources caps how many distinct rendered names get their own sentinel
	// resource; further names share one overflow resource ("~overflow").
	// Sentinel never frees a resource's statistics, so this bounds memory.
	MaxResources int `json:"max_resources"`

	// Flow are QPS rules (rule_flow.go).
	Flow []FlowRule `json:"flow"`
	// Isolation are concurrency rules (rule_isolation.go).
	Isolation []IsolationRule `json:"isolation"`
	// CircuitBreakers (rule_circuitbreaker.go).
	CircuitBreakers []BreakerRule `json:"circuit_breakers"`
	// Hotspot are per-value rules (rule_hotspot.go).
	Hotspot []HotspotRule `json:"hotspot"`
	// System are adaptive system protection rules, process-wide
	// (rule_system.go).
	System []SystemRule `json:"system"`

	// PressureTest identifies pressure-test traffic and gives it its own rules.
	PressureTest *PressureTest `json:"pressure_test"`

	// ErrorStatusFrom: responses with a status >= this count as errors for the
	// circuit breakers (default 500; 1000: none).
	ErrorStatusFrom int `json:"error_status_from"`
	// ErrorStatuses adds single error codes (e.g. 429).
	ErrorStatuses []int `json:"error_statuses"`

	// Blocked is the reply sent to blocked requests.
	Blocked Blocked `json:"blocked"`

	rt *runtime // built by Init (compiled.go)
}

// PressureTest configures pressure-test (load test) traffic.
type PressureTest struct {
	// Match is rendered per request (default "$header_x-pressure-test"); the
	// request is pressure traffic when it equals Value.
	Match *variables.Template `json:"match"`
	// Value that marks pressure traffic (default "true").
	Value string `json:"value"`
	// Flow, Isolation, CircuitBreakers and Hotspot are the rules for pressure
	// traffic, applied to the pressure resource ("<name>#pressure"). When all
	// are empty, pressure traffic shares the normal resource and rules and is
	// only shed earlier by system protection.
	Flow            []FlowRule      `json:"flow"`
	Isolation       []IsolationRule `json:"isolation"`
	CircuitBreakers []BreakerRule   `json:"circuit_breakers"`
	Hotspot         []HotspotRule   `json:"hotspot"`
	// SystemRatio scales the system thresholds for pressure traffic (default
	// 0.8): it is shed as soon as a metric passes 80% of a system threshold.
	SystemRatio float64 `json:"system_ratio"`
}

// Blocked is the reply to a blocked request.
type Blocked struct {
	// Status for flow, isolation, hotspot and system blocks (default 429).
	Status int `json:"status"`
	// CircuitBreakerStatus for open breakers (default 503).
	CircuitBreakerStatus int `json:"circuit_breaker_status"`
	// Body of the reply (default "blocked by sentinel: <reason>\n"); it may use
	// "{reason}".
	Body string `json:"body"`
	// ContentType of the body (default "text/plain").
	ContentType string `json:"content_type"`
	// Header names the blocking rule type: flow, isolation, circuit-breaker,
	// hotspot or system (default "x-moe-sentinel-blocked"; "-" disables it).
	Header string `json:"header"`
}

// Limits of Validate.
const (
	maxMaxResources = 100_000
	errorStatusNone = 1000 // error_status_from that counts no status as an error
)

// newConfig returns the defaults. Per-rule defaults are filled by Validate
// (a list element has no defaults of its own before it is decoded).
func newConfig() any {
	return &Config{
		Resource:        variables.MustCompileTemplate("$route_name"),
		MaxResources:    1000,
		ErrorStatusFrom: 500,
		Blocked: Blocked{
			Status:               429,
			CircuitBreakerStatus: 503,
			Body:                 "blocked by sentinel: {reason}\n",
			ContentType:          "text/plain",
			Header:               "x-moe-sentinel-blocked",
		},
	}
}

// Validate fills per-rule defaults and rejects bad values, naming the field.
func (c *Config) Validate() error {
	if c.Resource == nil {
		return api.FieldErrorf("resource", "must be a template such as \"$route_name\"")
	}
	if strings.ContainsAny(c.Namespace, "/#") {
		return api.FieldErrorf("namespace", "must not contain '/' or '#'")
	}
	if err := api.CheckRange("max_resources", c.MaxResources, 1, maxMaxResources); err != nil {
		return err
	}
	if err := validateRules("", c.Flow, c.Isolation, c.CircuitBreakers, c.Hotspot); err != nil {
		return err
	}
	for i := range c.System {
		if err := c.System[i].validate(api.Field("system", i)); err != nil {
			return err
		}
	}
	if p := c.PressureTest; p != nil {
		if p.Match == nil {
			p.Match = variables.MustCompileTemplate("$header_x-pressure-test")
		}
		if p.Value == "" {
			p.Value = "true"
		}
		if p.SystemRatio == 0 {
			p.SystemRatio = 0.8
		}
		// 0 is the default above: the accepted range is (0, 1].
		if err := api.CheckRange("pressure_test.system_ratio", p.SystemRatio, 0, 1); err != nil {
			return err
		}
		if err := validateRules("pressure_test", p.Flow, p.Isolation, p.CircuitBreakers, p.Hotspot); err != nil {
			return err
		}
	}
	if err := api.CheckRange("error_status_from", c.ErrorStatusFrom, 100, errorStatusNone); err != nil {
		return err
	}
	for i, s := range c.ErrorStatuses {
		if err := api.CheckRange(api.Field("error_statuses", i), s, 100, 599); err != nil {
			return err
		}
	}
	b := &c.Blocked
	// Any final status, not only 4xx/5xx: some deployments answer blocked
	// requests with a 200 and a body their clients understand.
	if err := api.CheckRange("blocked.status", b.Status, 200, 599); err != nil {
		return err
	}
	if err := api.CheckRange("blocked.circuit_breaker_status", b.CircuitBreakerStatus, 200, 599); err != nil {
		return err
	}
	if b.Header != "-" && !api.ValidHeaderName(b.Header) {
		return api.FieldErrorf("blocked.header", "invalid header name %q", b.Header)
	}
	if strings.ContainsAny(b.ContentType, "\r\n") {
		return api.FieldErrorf("blocked.content_type", "must not contain CR or LF")
	}
	return nil
}

// Needs declares MayBlock for receive only when a throttling rule can queue a
// request (sentinel sleeps inside Entry); otherwise the check runs on Envoy's
// worker thread.
func (c *Config) Needs() api.Needs {
	n := api.Needs{Phase: api.AfterRoute}
	if c.throttles() {
		n.MayBlock = api.BlockReceive
	}
	return n
}

func (c *Config) throttles() bool {
	check := func(flows []FlowRule, hots []HotspotRule) bool {
		for _, f := range flows {
			if strings.HasSuffix(f.Behavior, "throttling") {
				return true
			}
		}
		for _, h := range hots {
			if h.Behavior == "throttling" {
				return true
			}
		}
		return false
	}
	if check(c.Flow, c.Hotspot) {
		return true
	}
	return c.PressureTest != nil && check(c.PressureTest.Flow, c.PressureTest.Hotspot)
}
