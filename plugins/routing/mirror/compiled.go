package mirror

import (
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/moeproxy/moe/shared/api"
)

// compiled is what Init builds once per config version: the targets with
// their metrics and worker pools, and the HTTP client they share.
type compiled struct {
	targets []*target
}

type target struct {
	name, base string
	threshold  float64 // percentage / 100
	match      func(ctx api.Context, h api.RequestHeaderMap) bool
	pool       *pool // a target's own: a stalled target cannot starve another

	selected, dropped, skippedBody, failed, timeout api.Counter
	responses                                       [6]api.Counter // by status class 1xx..5xx (index 1..5)
}

// Init builds the targets and starts the workers. When the config is only
// checked (env.CheckOnly) no HTTP client is built and no worker starts
// (Validate checked the targets).
func (c *Config) Init(env api.ConfigEnv) error {
	m := env.Metrics()
	for _, t := range c.Targets {
		tg := &target{name: t.Name, base: strings.TrimSuffix(t.URL, "/"), threshold: 1}
		if t.Percentage != nil {
			tg.threshold = *t.Percentage / 100
		}
		if t.Match != nil && !t.Match.IsEmpty() {
			tg.match = t.Match.Matches
		}
		p := t.Name + "_"
		tg.selected = m.Counter(p + "selected")
		tg.dropped = m.Counter(p + "dropped")
		tg.skippedBody = m.Counter(p + "skipped_body")
		tg.failed = m.Counter(p + "failed")
		tg.timeout = m.Counter(p + "timeout")
		for cl := 1; cl <= 5; cl++ {
			tg.responses[cl] = m.Counter(p + "response_" + string(rune('0'+cl)) + "xx")
		}
		c.targets = append(c.targets, tg)
	}
	if env.CheckOnly() {
		return nil
	}
	timeout := c.Timeout.D()
	client := &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil, // straight to the target, like an Envoy cluster
			DialContext:           (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
			MaxConnsPerHost:       c.Workers,
			MaxIdleConnsPerHost:   c.Workers,
			IdleConnTimeout:       60 * time.Second,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			DisableCompression:    true,
		},
		// A redirect is the target's answer, not something to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	for _, t := range c.targets {
		t.pool = startPool(c.Workers, c.QueueSize, client, timeout, env.Log())
	}
	return nil
}

// Destroy stops the workers of this config version: copies still queued
// are dropped, copies in flight end within timeout.
func (c *Config) Destroy() {
	for _, t := range c.targets {
		if t.pool != nil {
			t.pool.stop()
		}
	}
}
