package mirror

import (
	"net/url"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/match"
)

// Config is the mirror config: where to copy which requests, and the
// bounded pool that sends the copies.
type Config struct {
	// Targets are the upstreams requests are copied to; each decides on its
	// own (match, percentage).
	Targets []Target `json:"targets"`
	// MaxBody is the largest request body copied (bytes, default 64 KiB); a
	// request with a larger body is not mirrored. 0 mirrors only requests
	// without a body.
	MaxBody int `json:"max_body"`
	// Workers is the number of goroutines sending copies, per target
	// (default 8): at most this many mirror requests to a target are in
	// flight.
	Workers int `json:"workers"`
	// QueueSize is how many copies may wait for a worker, per target
	// (default 256); a copy that finds the queue full is dropped (counted).
	QueueSize int `json:"queue_size"`
	// Timeout bounds one mirror request, connect to response (default 2s).
	Timeout api.Duration `json:"timeout"`
	// HostSuffix is appended to the Host of the copies ("-shadow", as
	// Envoy's request mirror policies); "" keeps the host.
	HostSuffix string `json:"host_suffix"`

	compiled
}

// Target is one mirror upstream.
type Target struct {
	// Name names the target's metrics (lower case letters, digits, '_').
	Name string `json:"name"`
	// URL is the upstream, "http://host:port" (https too); the copy keeps
	// the request's path and query.
	URL string `json:"url"`
	// Percentage of the matching requests to copy (0..100, default 100).
	Percentage *float64 `json:"percentage"`
	// Match selects the requests to copy (none: every request).
	Match *match.Match `json:"match"`
}

func newConfig() any {
	return &Config{MaxBody: 64 << 10, Workers: 8, QueueSize: 256, Timeout: api.Duration(2 * time.Second), HostSuffix: "-shadow"}
}

// Validate checks everything that needs no I/O.
func (c *Config) Validate() error {
	if len(c.Targets) == 0 {
		return api.FieldErrorf("targets", "is required: at least one upstream to mirror to")
	}
	if len(c.Targets) > 16 {
		return api.FieldErrorf("targets", "at most 16 targets, got %d", len(c.Targets))
	}
	names := map[string]int{}
	for i, t := range c.Targets {
		if !validName(t.Name) {
			return api.FieldErrorf(api.Field("targets", i, "name"), "must be lower case letters, digits and '_' (it names metrics), got %q", t.Name)
		}
		if j, dup := names[t.Name]; dup {
			return api.FieldErrorf(api.Field("targets", i, "name"), "%q is also targets[%d]", t.Name, j)
		}
		names[t.Name] = i
		u, err := url.Parse(t.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return api.FieldErrorf(api.Field("targets", i, "url"), "must be http(s)://host[:port] without path or query, got %q", t.URL)
		}
		if t.Percentage != nil {
			if err := api.CheckRange(api.Field("targets", i, "percentage"), *t.Percentage, 0, 100); err != nil {
				return err
			}
		}
	}
	if err := api.CheckRange("max_body", c.MaxBody, 0, 16<<20); err != nil {
		return err
	}
	if err := api.CheckRange("workers", c.Workers, 1, 1024); err != nil {
		return err
	}
	if err := api.CheckRange("queue_size", c.QueueSize, 0, 1<<20); err != nil {
		return err
	}
	if err := api.CheckRange("timeout", c.Timeout.D(), time.Millisecond, 5*time.Minute); err != nil {
		return err
	}
	for _, r := range c.HostSuffix {
		if r <= ' ' || r >= 0x7f || r == '/' {
			return api.FieldErrorf("host_suffix", "must be printable ASCII without spaces or '/', got %q", c.HostSuffix)
		}
	}
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Needs streams the request body (copied up to max_body while it passes
// through, never held back) when bodies are mirrored; headers only
// otherwise. Nothing blocks: a copy is queued, never sent inline.
func (c *Config) Needs() api.Needs {
	n := api.Needs{Phase: api.AfterRoute}
	if c.MaxBody > 0 {
		n.RequestBody = api.StreamingBody
	}
	return n
}
