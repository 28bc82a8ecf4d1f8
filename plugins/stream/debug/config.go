package debug

import (
	"time"

	"github.com/moeproxy/moe/shared/api"
)

// Config of the debug plugin. See README.md for the reference.
type Config struct {
	// Header is the request header that asks for a trace; its value must be
	// Secret. It is removed before the request goes upstream.
	Header string `json:"header"`
	// Secret turns the debug header on ("" = header debugging off). At least
	// 16 bytes; compared in constant time, never logged.
	Secret string `json:"secret"`
	// ResponseHeader carries the trace (Server-Timing syntax; set it to
	// "server-timing" to see the figures in a browser's developer tools).
	ResponseHeader string `json:"response_header"`
	// SlowThreshold > 0 logs every request that takes at least this long
	// (from the first byte received to the end of the response) with the
	// same trace. It traces every request of the route (two clock reads per
	// plugin hook).
	SlowThreshold api.Duration `json:"slow_threshold"`

	compiled
}

const (
	minSecret        = 16
	maxSecret        = 1024
	maxSlowThreshold = time.Hour
)

func newConfig() any {
	return &Config{Header: "x-moe-debug", ResponseHeader: "x-moe-debug-trace"}
}

// Validate never prints the secret.
func (c *Config) Validate() error {
	if err := api.CheckHeaderName("header", c.Header); err != nil {
		return err
	}
	if err := api.CheckHeaderName("response_header", c.ResponseHeader); err != nil {
		return err
	}
	if c.Secret != "" && (len(c.Secret) < minSecret || len(c.Secret) > maxSecret) {
		return api.FieldErrorf("secret", "must be %d to %d bytes long, got %d bytes", minSecret, maxSecret, len(c.Secret))
	}
	for i := 0; i < len(c.Secret); i++ {
		if b := c.Secret[i]; b < 0x21 || b > 0x7e {
			return api.FieldErrorf("secret", "must be printable ASCII without spaces (it travels in a header); byte %d is not", i)
		}
	}
	if err := api.CheckRange("slow_threshold", c.SlowThreshold.D(), 0, maxSlowThreshold); err != nil {
		return err
	}
	if c.Secret == "" && c.SlowThreshold == 0 {
		return api.FieldErrorf("secret", "is required unless slow_threshold is set: the plugin would do nothing")
	}
	return nil
}
