package sentinel

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// Config is the sentinel plugin's config. Every rule list is optional; a config
// without rules only counts traffic.
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

	Flow            []FlowRule      `json:"flow"`
	Isolation       []IsolationRule `json:"isolation"`
	CircuitBreakers []BreakerRule   `json:"circuit_breakers"`
	Hotspot         []HotspotRule   `json:"hotspot"`
	System          []SystemRule    `json:"system"`

	// PressureTest identifies pressure-test traffic and gives it its own rules.
	PressureTest *PressureTest `json:"pressure_test"`

	// ErrorStatusFrom: responses with a status >= this count as errors for the
	// circuit breakers (default 500). ErrorStatuses adds single codes (e.g. 429).
	ErrorStatusFrom int   `json:"error_status_from"`
	ErrorStatuses   []int `json:"error_statuses"`

	// Blocked is the reply sent to blocked requests.
	Blocked Blocked `json:"blocked"`

	rt *runtime // built by Init
}

// FlowRule is a QPS limit (sentinel flow rule).
type FlowRule struct {
	// Resource restricts the rule to one rendered resource name; empty means
	// every name. A named rule replaces the unnamed flow rules for that name.
	Resource string `json:"resource"`
	// Threshold is the number of requests admitted per stat_interval.
	Threshold float64 `json:"threshold"`
	// Behavior: "reject" (default), "warm_up", "throttling" (queue requests,
	// evenly spaced, for at most max_queueing_time) or "warm_up_throttling".
	Behavior string `json:"behavior"`
	// StatInterval is the window Threshold counts in (default 1s).
	StatInterval api.Duration `json:"stat_interval"`
	// WarmUpPeriod and WarmUpColdFactor shape warm_up (default 10s, 3).
	WarmUpPeriod     api.Duration `json:"warm_up_period"`
	WarmUpColdFactor uint32       `json:"warm_up_cold_factor"`
	// MaxQueueingTime bounds a throttled request's wait (default 500ms).
	MaxQueueingTime api.Duration `json:"max_queueing_time"`
}

// IsolationRule limits concurrent requests (sentinel isolation rule).
type IsolationRule struct {
	Resource       string `json:"resource"`
	MaxConcurrency uint32 `json:"max_concurrency"`
}

// BreakerRule is a circuit breaker (sentinel circuitbreaker rule).
type BreakerRule struct {
	Resource string `json:"resource"`
	// Strategy: "slow_request_ratio", "error_ratio" or "error_count".
	Strategy string `json:"strategy"`
	// Threshold is a ratio in [0,1] for the ratio strategies, a count for
	// error_count.
	Threshold float64 `json:"threshold"`
	// MaxAllowedRT marks a request slow (slow_request_ratio only).
	MaxAllowedRT api.Duration `json:"max_allowed_rt"`
	// RetryTimeout is how long the breaker stays open before a probe (default 5s).
	RetryTimeout api.Duration `json:"retry_timeout"`
	// MinRequestAmount: fewer requests in the window never trip it (default 5).
	MinRequestAmount uint64 `json:"min_request_amount"`
	// StatInterval is the breaker's statistic window (default 1s).
	StatInterval api.Duration `json:"stat_interval"`
	// ProbeNum: successful probes needed in half-open to close (default 0: the
	// first probe decides, as in sentinel).
	ProbeNum uint64 `json:"probe_num"`
}

// HotspotRule limits per value of a key (sentinel hotspot param rule).
type HotspotRule struct {
	Resource string `json:"resource"`
	// Key is rendered per request, e.g. "$header_x-user". Requests where it is
	// empty are not limited by this rule.
	Key *variables.Template `json:"key"`
	// Metric: "qps" (default) or "concurrency".
	Metric string `json:"metric"`
	// Threshold per value per Duration (qps) or concurrent (concurrency).
	Threshold int64 `json:"threshold"`
	// Burst adds extra tokens (qps, reject).
	Burst int64 `json:"burst"`
	// Duration is the qps window (default 1s, whole seconds).
	Duration api.Duration `json:"duration"`
	// Behavior: "reject" (default) or "throttling" (qps only).
	Behavior        string       `json:"behavior"`
	MaxQueueingTime api.Duration `json:"max_queueing_time"`
	// MaxKeys bounds the values tracked (LRU, default 10000).
	MaxKeys int64 `json:"max_keys"`
	// Overrides sets a threshold for specific values, e.g. {"vip": 100}.
	Overrides map[string]int64 `json:"overrides"`
}

// SystemRule is an adaptive system protection rule (sentinel system rule).
// System rules are process-wide in sentinel: see README "System protection".
type SystemRule struct {
	// Metric: "load", "cpu" (usage ratio 0..1), "concurrency", "inbound_qps" or
	// "avg_rt" (milliseconds).
	Metric    string  `json:"metric"`
	Threshold float64 `json:"threshold"`
	// Adaptive: "bbr" (default for load/cpu: only shed while concurrency exceeds
	// the estimated capacity) or "none".
	Adaptive string `json:"adaptive"`
}

// PressureTest configures pressure-test (load test) traffic.
type PressureTest struct {
	// Match is rendered per request (default "$header_x-pressure-test"); the
	// request is pressure traffic when it equals Value (default "true").
	Match *variables.Template `json:"match"`
	Value string              `json:"value"`
	// Rules for pressure traffic, applied to the pressure resource
	// ("<name>#pressure"). When all are empty, pressure traffic shares the normal
	// resource and rules and is only shed earlier by system protection.
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

// NewConfig returns the defaults.
func NewConfig() *Config {
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

var (
	flowBehaviors   = []string{"reject", "warm_up", "throttling", "warm_up_throttling"}
	breakerStrats   = []string{"slow_request_ratio", "error_ratio", "error_count"}
	hotspotMetrics  = []string{"qps", "concurrency"}
	hotspotBehavior = []string{"reject", "throttling"}
	systemMetrics   = []string{"load", "cpu", "concurrency", "inbound_qps", "avg_rt"}
	adaptiveModes   = []string{"bbr", "none"}
)

func oneOf(field, v string, allowed []string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return api.FieldErrorf(field, "unknown value %q (want one of %s)", v, strings.Join(allowed, ", "))
}

// Validate fills per-rule defaults and rejects bad values, naming the field.
func (c *Config) Validate() error {
	if c.Resource == nil {
		return api.FieldErrorf("resource", "must be a template such as \"$route_name\"")
	}
	if strings.ContainsAny(c.Namespace, "/#") {
		return api.FieldErrorf("namespace", "must not contain '/' or '#'")
	}
	if c.MaxResources < 1 || c.MaxResources > 100000 {
		return api.FieldErrorf("max_resources", "must be in [1, 100000], got %d", c.MaxResources)
	}
	if err := validateRules("", c.Flow, c.Isolation, c.CircuitBreakers, c.Hotspot); err != nil {
		return err
	}
	for i := range c.System {
		if err := c.System[i].validate(fmt.Sprintf("system[%d]", i)); err != nil {
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
		if p.SystemRatio < 0 || p.SystemRatio > 1 {
			return api.FieldErrorf("pressure_test.system_ratio", "must be in (0, 1], got %v", p.SystemRatio)
		}
		if err := validateRules("pressure_test.", p.Flow, p.Isolation, p.CircuitBreakers, p.Hotspot); err != nil {
			return err
		}
	}
	if c.ErrorStatusFrom < 100 || c.ErrorStatusFrom > 1000 {
		return api.FieldErrorf("error_status_from", "must be an HTTP status in [100, 599] (or 1000 to disable), got %d", c.ErrorStatusFrom)
	}
	for i, s := range c.ErrorStatuses {
		if s < 100 || s > 599 {
			return api.FieldErrorf(fmt.Sprintf("error_statuses[%d]", i), "must be an HTTP status in [100, 599], got %d", s)
		}
	}
	b := &c.Blocked
	if b.Status < 200 || b.Status > 599 {
		return api.FieldErrorf("blocked.status", "must be in [200, 599], got %d", b.Status)
	}
	if b.CircuitBreakerStatus < 200 || b.CircuitBreakerStatus > 599 {
		return api.FieldErrorf("blocked.circuit_breaker_status", "must be in [200, 599], got %d", b.CircuitBreakerStatus)
	}
	if b.Header != "-" && !validHeaderName(b.Header) {
		return api.FieldErrorf("blocked.header", "invalid header name %q", b.Header)
	}
	if strings.ContainsAny(b.ContentType, "\r\n") {
		return api.FieldErrorf("blocked.content_type", "must not contain CR or LF")
	}
	return nil
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c == '-' || c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
		if !ok {
			return false
		}
	}
	return true
}

func validateRules(prefix string, flows []FlowRule, isos []IsolationRule, cbs []BreakerRule, hots []HotspotRule) error {
	for i := range flows {
		if err := flows[i].validate(fmt.Sprintf("%sflow[%d]", prefix, i)); err != nil {
			return err
		}
	}
	for i := range isos {
		if isos[i].MaxConcurrency == 0 {
			return api.FieldErrorf(fmt.Sprintf("%sisolation[%d].max_concurrency", prefix, i), "must be > 0")
		}
		if err := checkResourceName(fmt.Sprintf("%sisolation[%d].resource", prefix, i), isos[i].Resource); err != nil {
			return err
		}
	}
	for i := range cbs {
		if err := cbs[i].validate(fmt.Sprintf("%scircuit_breakers[%d]", prefix, i)); err != nil {
			return err
		}
	}
	for i := range hots {
		if err := hots[i].validate(fmt.Sprintf("%shotspot[%d]", prefix, i)); err != nil {
			return err
		}
	}
	return nil
}

func checkResourceName(field, r string) error {
	if strings.Contains(r, "#") {
		return api.FieldErrorf(field, "must not contain '#' (reserved for pressure resources)")
	}
	return nil
}

func positiveDuration(field string, d *api.Duration, def time.Duration, min time.Duration) error {
	if *d == 0 {
		*d = api.Duration(def)
	}
	if d.D() < min {
		return api.FieldErrorf(field, "must be at least %v, got %v", min, d.D())
	}
	return nil
}

func (r *FlowRule) validate(f string) error {
	if err := checkResourceName(f+".resource", r.Resource); err != nil {
		return err
	}
	if r.Threshold <= 0 || math.IsInf(r.Threshold, 0) || math.IsNaN(r.Threshold) {
		return api.FieldErrorf(f+".threshold", "must be > 0, got %v", r.Threshold)
	}
	if r.Behavior == "" {
		r.Behavior = "reject"
	}
	if err := oneOf(f+".behavior", r.Behavior, flowBehaviors); err != nil {
		return err
	}
	if err := positiveDuration(f+".stat_interval", &r.StatInterval, time.Second, time.Millisecond); err != nil {
		return err
	}
	if r.StatInterval.D() > 10*time.Minute {
		return api.FieldErrorf(f+".stat_interval", "must be at most 10m, got %v", r.StatInterval.D())
	}
	if strings.HasPrefix(r.Behavior, "warm_up") {
		if err := positiveDuration(f+".warm_up_period", &r.WarmUpPeriod, 10*time.Second, time.Second); err != nil {
			return err
		}
		if r.WarmUpColdFactor == 0 {
			r.WarmUpColdFactor = 3
		}
		if r.WarmUpColdFactor < 2 {
			return api.FieldErrorf(f+".warm_up_cold_factor", "must be > 1, got %d", r.WarmUpColdFactor)
		}
	}
	if strings.HasSuffix(r.Behavior, "throttling") {
		if err := positiveDuration(f+".max_queueing_time", &r.MaxQueueingTime, 500*time.Millisecond, time.Millisecond); err != nil {
			return err
		}
		if r.MaxQueueingTime.D() > time.Minute {
			return api.FieldErrorf(f+".max_queueing_time", "must be at most 1m, got %v", r.MaxQueueingTime.D())
		}
	}
	return nil
}

func (r *BreakerRule) validate(f string) error {
	if err := checkResourceName(f+".resource", r.Resource); err != nil {
		return err
	}
	if err := oneOf(f+".strategy", r.Strategy, breakerStrats); err != nil {
		return err
	}
	switch r.Strategy {
	case "error_count":
		if r.Threshold < 1 {
			return api.FieldErrorf(f+".threshold", "must be a count >= 1 for error_count, got %v", r.Threshold)
		}
	default:
		if !(r.Threshold > 0 && r.Threshold <= 1) {
			return api.FieldErrorf(f+".threshold", "must be a ratio in (0, 1] for %s, got %v", r.Strategy, r.Threshold)
		}
	}
	if r.Strategy == "slow_request_ratio" && r.MaxAllowedRT.D() < time.Millisecond {
		return api.FieldErrorf(f+".max_allowed_rt", "is required for slow_request_ratio (at least 1ms)")
	}
	if err := positiveDuration(f+".retry_timeout", &r.RetryTimeout, 5*time.Second, time.Millisecond); err != nil {
		return err
	}
	if err := positiveDuration(f+".stat_interval", &r.StatInterval, time.Second, 10*time.Millisecond); err != nil {
		return err
	}
	if r.MinRequestAmount == 0 {
		r.MinRequestAmount = 5
	}
	return nil
}

func (r *HotspotRule) validate(f string) error {
	if err := checkResourceName(f+".resource", r.Resource); err != nil {
		return err
	}
	if r.Key == nil {
		return api.FieldErrorf(f+".key", "is required (a template such as \"$header_x-user\")")
	}
	if r.Metric == "" {
		r.Metric = "qps"
	}
	if err := oneOf(f+".metric", r.Metric, hotspotMetrics); err != nil {
		return err
	}
	if r.Behavior == "" {
		r.Behavior = "reject"
	}
	if err := oneOf(f+".behavior", r.Behavior, hotspotBehavior); err != nil {
		return err
	}
	if r.Metric == "concurrency" && r.Behavior == "throttling" {
		return api.FieldErrorf(f+".behavior", "throttling needs metric qps")
	}
	if r.Threshold < 0 {
		return api.FieldErrorf(f+".threshold", "must be >= 0, got %d", r.Threshold)
	}
	if r.Burst < 0 {
		return api.FieldErrorf(f+".burst", "must be >= 0, got %d", r.Burst)
	}
	if err := positiveDuration(f+".duration", &r.Duration, time.Second, time.Second); err != nil {
		return err
	}
	if r.Duration.D()%time.Second != 0 {
		return api.FieldErrorf(f+".duration", "must be whole seconds, got %v", r.Duration.D())
	}
	if r.Behavior == "throttling" {
		if err := positiveDuration(f+".max_queueing_time", &r.MaxQueueingTime, 500*time.Millisecond, time.Millisecond); err != nil {
			return err
		}
		if r.MaxQueueingTime.D() > time.Minute {
			return api.FieldErrorf(f+".max_queueing_time", "must be at most 1m, got %v", r.MaxQueueingTime.D())
		}
	}
	if r.MaxKeys == 0 {
		r.MaxKeys = 10000
	}
	if r.MaxKeys < 1 || r.MaxKeys > 1000000 {
		return api.FieldErrorf(f+".max_keys", "must be in [1, 1000000], got %d", r.MaxKeys)
	}
	for k, v := range r.Overrides {
		if v < 0 {
			return api.FieldErrorf(f+".overrides."+k, "must be >= 0, got %d", v)
		}
	}
	return nil
}

func (r *SystemRule) validate(f string) error {
	if err := oneOf(f+".metric", r.Metric, systemMetrics); err != nil {
		return err
	}
	if !(r.Threshold > 0) || math.IsInf(r.Threshold, 0) {
		return api.FieldErrorf(f+".threshold", "must be > 0, got %v", r.Threshold)
	}
	if r.Metric == "cpu" && r.Threshold > 1 {
		return api.FieldErrorf(f+".threshold", "cpu is a usage ratio in (0, 1], got %v", r.Threshold)
	}
	if r.Adaptive == "" {
		r.Adaptive = "bbr"
	}
	if err := oneOf(f+".adaptive", r.Adaptive, adaptiveModes); err != nil {
		return err
	}
	if r.Adaptive == "bbr" && r.Metric != "load" && r.Metric != "cpu" {
		// sentinel applies BBR only to load and cpu rules.
		r.Adaptive = "none"
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
