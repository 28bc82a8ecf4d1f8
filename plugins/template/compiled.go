package template

import (
	"strings"

	"github.com/moeproxy/moe/shared/api"
)

// compiled is what Init builds once per config version, so that a request
// only looks things up: lower-cased header names, the prebuilt refusal and
// the metrics.
type compiled struct {
	require, stamp string
	refusal        string
	refusalHeaders api.Headers
	passed, denied api.Counter
}

// Init runs once per config version, after Validate.
func (c *Config) Init(env api.ConfigEnv) error {
	c.require = strings.ToLower(c.RequireHeader)
	c.stamp = strings.ToLower(c.StampHeader)
	c.refusal = c.Body
	if c.refusal == "" && c.require != "" {
		c.refusal = "missing " + c.require + "\n"
	}
	c.refusalHeaders = api.Headers{"content-type": {"text/plain; charset=utf-8"}}
	m := env.Metrics()
	c.passed = m.Counter("passed")
	c.denied = m.Counter("denied")
	if c.require == "" && c.Stamp == nil {
		env.Log().Warnf("neither require_header nor stamp is set: the plugin does nothing")
	}
	return nil
}
