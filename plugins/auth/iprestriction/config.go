package iprestriction

import (
	"errors"
	"fmt"

	"github.com/moeproxy/moe/shared/api"
)

// Config of the ip-restriction plugin. See README.md for the reference.
type Config struct {
	// Allow lists the CIDRs or single IPs that may pass; when set, every other
	// address is denied.
	Allow []string `json:"allow"`
	// Deny lists the CIDRs or single IPs that are refused. Deny wins over Allow.
	Deny []string `json:"deny"`
	// XFFNumTrustedHops, as in Envoy's HTTP connection manager: 0 (default) checks
	// the downstream connection's address; N > 0 checks the Nth address from the
	// right of X-Forwarded-For (the N-1 addresses right of it were added by
	// proxies you trust, the last one by the proxy in front of Envoy).
	XFFNumTrustedHops int `json:"xff_num_trusted_hops"`
	// XFFFallback is what happens when X-Forwarded-For is missing, has fewer than
	// XFFNumTrustedHops entries or the chosen entry is not an IP: "deny"
	// (default, fail closed) or "remote_addr" (use the downstream address, which
	// is what Envoy does).
	XFFFallback string `json:"xff_fallback"`
	// Status and Message of the denial reply.
	Status  int    `json:"status"`
	Message string `json:"message"`

	allow, deny    *ipSet
	fallbackRemote bool
	replyHeaders   api.Headers
	m              metricSet
}

const (
	fallbackDeny   = "deny"
	fallbackRemote = "remote_addr"
	maxTrustedHops = 64
)

func newConfig() any {
	return &Config{
		XFFFallback: fallbackDeny,
		Status:      403,
		Message:     "Your IP address is not allowed",
	}
}

// Validate checks values and compiles the address sets (so a bad entry is
// reported with its index, and Init has nothing left that can fail).
func (c *Config) Validate() error {
	if len(c.Allow) == 0 && len(c.Deny) == 0 {
		return api.FieldErrorf("", "at least one of allow or deny must list an address")
	}
	var err error
	if c.allow, err = compileList("allow", c.Allow); err != nil {
		return err
	}
	if c.deny, err = compileList("deny", c.Deny); err != nil {
		return err
	}
	if c.XFFNumTrustedHops < 0 || c.XFFNumTrustedHops > maxTrustedHops {
		return api.FieldErrorf("xff_num_trusted_hops", "must be between 0 and %d, got %d", maxTrustedHops, c.XFFNumTrustedHops)
	}
	switch c.XFFFallback {
	case fallbackDeny:
	case fallbackRemote:
		c.fallbackRemote = true
	default:
		return api.FieldErrorf("xff_fallback", "must be %q or %q, got %q", fallbackDeny, fallbackRemote, c.XFFFallback)
	}
	if c.Status < 400 || c.Status > 599 {
		return api.FieldErrorf("status", "must be a 4xx or 5xx code, got %d", c.Status)
	}
	return nil
}

func compileList(field string, entries []string) (*ipSet, error) {
	s, err := newIPSet(entries)
	if err != nil {
		var ee *entryError
		if errors.As(err, &ee) {
			return nil, api.FieldErrorf(fmt.Sprintf("%s[%d]", field, ee.index), "%v", ee.err)
		}
		return nil, api.FieldErrorf(field, "%v", err)
	}
	return s, nil
}

// Init defines the metrics and the reply headers once per config version.
func (c *Config) Init(env api.ConfigEnv) error {
	c.m = newMetrics(env.Metrics())
	// The framework copies reply headers, so one map serves every request.
	c.replyHeaders = api.Headers{"content-type": {"text/plain; charset=utf-8"}}
	return nil
}
