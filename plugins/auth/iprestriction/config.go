package iprestriction

import (
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

	compiled // built by Validate and Init (compiled.go)
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

// Validate checks values and compiles the address sets: compiling is the
// check (a bad entry is reported with its index), and offline validation
// (moectl) runs Validate, not Init.
func (c *Config) Validate() error {
	if len(c.Allow) == 0 && len(c.Deny) == 0 {
		return api.FieldErrorf("allow", "at least one of allow or deny must list an address")
	}
	var err error
	if c.allow, err = compileList("allow", c.Allow); err != nil {
		return err
	}
	if c.deny, err = compileList("deny", c.Deny); err != nil {
		return err
	}
	if err := api.CheckRange("xff_num_trusted_hops", c.XFFNumTrustedHops, 0, maxTrustedHops); err != nil {
		return err
	}
	if err := api.CheckOneOf("xff_fallback", c.XFFFallback, fallbackDeny, fallbackRemote); err != nil {
		return err
	}
	c.fallbackRemote = c.XFFFallback == fallbackRemote
	return api.CheckStatus("status", c.Status)
}
