package fault

import (
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/match"
)

// Config of the fault plugin. See README.md for the reference.
type Config struct {
	// Match selects the requests faults apply to (headers, variables, CEL,
	// path, ...); unset = every request.
	Match *match.Match `json:"match"`
	// Delay holds matching requests for a fixed time before they go on.
	Delay *Delay `json:"delay"`
	// Abort answers matching requests itself (after the delay, if both hit).
	Abort *Abort `json:"abort"`
	// MaxActiveFaults bounds the faults in progress at once (delayed requests
	// waiting, aborts being answered) per config; past it requests go on
	// untouched and faults_overflow counts them. 0 = no bound.
	MaxActiveFaults int `json:"max_active_faults"`

	compiled
}

// Delay is a fixed delay for a percentage of the matching requests.
type Delay struct {
	// Duration of the delay (> 0, at most 10m).
	Duration api.Duration `json:"duration"`
	// Percentage of matching requests delayed, 0..100, fractions allowed
	// (unset = 100).
	Percentage *float64 `json:"percentage"`
}

// Abort is a reply for a percentage of the matching requests.
type Abort struct {
	// Status of the reply (200..599).
	Status int `json:"status"`
	// Percentage of matching requests aborted, 0..100 (unset = 100).
	Percentage *float64 `json:"percentage"`
	// Body of the reply (text/plain unless headers set a content-type).
	Body string `json:"body"`
	// Headers of the reply.
	Headers map[string]string `json:"headers"`
}

const (
	maxDelay              = 10 * time.Minute
	defaultMaxActiveFault = 10_000
	maxMaxActiveFaults    = 10_000_000
)

func newConfig() any { return &Config{MaxActiveFaults: defaultMaxActiveFault} }

// Validate checks the values; errors name the field. The match was compiled
// (and its regexes, variables and CEL checked) while decoding.
func (c *Config) Validate() error {
	if c.Delay == nil && c.Abort == nil {
		return api.FieldErrorf("delay", "set delay or abort (or both)")
	}
	if d := c.Delay; d != nil {
		if err := api.CheckAbove("delay.duration", d.Duration.D(), 0); err != nil {
			return err
		}
		if err := api.CheckRange("delay.duration", d.Duration.D(), 0, maxDelay); err != nil {
			return err
		}
		if err := checkPercentage("delay.percentage", d.Percentage); err != nil {
			return err
		}
	}
	if a := c.Abort; a != nil {
		if a.Status < 200 || a.Status > 599 {
			return api.FieldErrorf("abort.status", "must be an HTTP status between 200 and 599, got %d", a.Status)
		}
		if err := checkPercentage("abort.percentage", a.Percentage); err != nil {
			return err
		}
		if strings.ContainsRune(a.Body, 0) {
			return api.FieldErrorf("abort.body", "must not contain NUL bytes")
		}
		for _, name := range slices.Sorted(maps.Keys(a.Headers)) { // the same error every time
			v := a.Headers[name]
			field := "abort.headers." + name
			if err := api.CheckHeaderName(field, name); err != nil {
				return err
			}
			if strings.ContainsAny(v, "\r\n\x00") {
				return api.FieldErrorf(field, "a header value must not contain CR, LF or NUL")
			}
			switch strings.ToLower(name) {
			case "content-length", "transfer-encoding", "connection":
				return api.FieldErrorf(field, "is set by the proxy, not by a reply's config")
			}
		}
	}
	return api.CheckRange("max_active_faults", c.MaxActiveFaults, 0, maxMaxActiveFaults)
}

func checkPercentage(field string, p *float64) error {
	if p == nil {
		return nil
	}
	if math.IsNaN(*p) || *p < 0 || *p > 100 {
		return api.FieldErrorf(field, "must be a percentage between 0 and 100, got %v", *p)
	}
	return nil
}

// Needs: only a config with a delay may block (it waits), so only then does
// the request phase leave Envoy's worker thread; an abort-only config runs
// inline.
func (c *Config) Needs() api.Needs {
	n := api.Needs{Phase: api.AfterRoute}
	if c.Delay != nil && (c.Delay.Percentage == nil || *c.Delay.Percentage > 0) {
		n.MayBlock = api.BlockReceive
	}
	return n
}
