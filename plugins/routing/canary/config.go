package canary

import (
	"net/netip"
	"strings"
	"time"

	"github.com/moeproxy/moe/plugins/routing/internal/steer"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/match"
	"github.com/moeproxy/moe/shared/variables"
)

// Config of the canary plugin. See README.md for the reference.
type Config struct {
	// Targets are the sides of the split (2 or more usually: stable and
	// canary). A target's name is its identity: users are hashed against it,
	// so reordering targets moves nobody and renaming one moves its users.
	Targets []Target `json:"targets"`
	// Keys make the split sticky: the first variable with a non-empty value
	// (e.g. "$header_x-user-id", "$cookie_uid", "$consumer") is hashed. No
	// keys, or none with a value: see NoKeyTarget.
	Keys []variables.Var `json:"keys"`
	// MaxKeyLength: a key value longer than this is ignored (counted as
	// invalid_key) and the next key is tried.
	MaxKeyLength int `json:"max_key_length"`
	// Salt is mixed into the hash: two canaries with different salts pick
	// different users for their first 10%.
	Salt string `json:"salt"`
	// NoKeyTarget is where a request without a key goes ("" = a weighted
	// random choice per request).
	NoKeyTarget string `json:"no_key_target"`
	// ClusterHeader is the request header set to the chosen target's cluster,
	// for a route with `cluster_header` ("" = none).
	ClusterHeader string `json:"cluster_header"`
	// TargetHeader is a request header set to the chosen target's name (for
	// routes that match on it, and for the upstream; "" = none).
	TargetHeader string `json:"target_header"`
	// ResponseHeader is a response header set to the chosen target's name
	// ("" = none).
	ResponseHeader string `json:"response_header"`
	// Override lets testers pick a target by header or cookie.
	Override *Override `json:"override"`
	// Cookie, when set, pins a browser to its target with a cookie.
	Cookie *Cookie `json:"cookie"`

	compiled
}

// Target is one side of the split.
type Target struct {
	// Name identifies the target (metrics, cookies, override values, the hash).
	Name string `json:"name"`
	// Weight is the target's share, relative to the others (0 = no new users;
	// overrides still reach it).
	Weight int `json:"weight"`
	// Cluster is written into cluster_header.
	Cluster string `json:"cluster"`
	// Hosts, when set, pin one of these IP:port hosts inside the route's
	// cluster (Envoy's upstream override host), chosen by the key.
	Hosts []string `json:"hosts"`
	// Strict: when the pinned host is unavailable Envoy answers 503 instead of
	// load balancing in the cluster.
	Strict bool `json:"strict"`
}

// Override is the testers' way to choose a target.
type Override struct {
	// Header holding a target name.
	Header string `json:"header"`
	// Cookie holding a target name.
	Cookie string `json:"cookie"`
	// Match restricts overrides to matching requests (e.g. testers' source
	// addresses); unset = every request may override.
	Match *match.Match `json:"match"`
}

// Cookie pins a browser: the response sets it to the chosen target's name,
// later requests carrying it go to that target while it has a weight.
type Cookie struct {
	Name     string       `json:"name"`
	MaxAge   api.Duration `json:"max_age"`
	Path     string       `json:"path"`
	Domain   string       `json:"domain"`
	Secure   bool         `json:"secure"`
	HTTPOnly bool         `json:"http_only"`
	SameSite string       `json:"same_site"`
}

const (
	maxTargets     = 64
	maxWeight      = 1_000_000
	maxHostsPerTgt = 256
)

func newConfig() any {
	return &Config{ClusterHeader: "x-moe-cluster", MaxKeyLength: 256}
}

// Validate checks the config; errors name the field.
func (c *Config) Validate() error {
	if len(c.Targets) == 0 {
		return api.FieldErrorf("targets", "at least one target is required")
	}
	if len(c.Targets) > maxTargets {
		return api.FieldErrorf("targets", "at most %d targets, got %d", maxTargets, len(c.Targets))
	}
	if c.ClusterHeader != "" {
		if err := api.CheckHeaderName("cluster_header", c.ClusterHeader); err != nil {
			return err
		}
	}
	if c.TargetHeader != "" {
		if err := api.CheckHeaderName("target_header", c.TargetHeader); err != nil {
			return err
		}
	}
	if c.ResponseHeader != "" {
		if err := api.CheckHeaderName("response_header", c.ResponseHeader); err != nil {
			return err
		}
	}
	names := map[string]bool{}
	suffixes := map[string]string{}
	total := 0
	for i := range c.Targets {
		t := &c.Targets[i]
		f := api.Field("targets", i)
		if err := steer.CheckName(f+".name", t.Name); err != nil {
			return err
		}
		if names[t.Name] {
			return api.FieldErrorf(f+".name", "duplicate target %q", t.Name)
		}
		names[t.Name] = true
		if other, dup := suffixes[steer.MetricSuffix(t.Name)]; dup {
			return api.FieldErrorf(f+".name", "%q and %q have the same metric name", other, t.Name)
		}
		suffixes[steer.MetricSuffix(t.Name)] = t.Name
		if err := api.CheckRange(f+".weight", t.Weight, 0, maxWeight); err != nil {
			return err
		}
		total += t.Weight
		if t.Cluster != "" {
			if err := steer.CheckClusterName(f+".cluster", t.Cluster); err != nil {
				return err
			}
			if c.ClusterHeader == "" {
				return api.FieldErrorf(f+".cluster", "needs cluster_header (the header the route's cluster_header reads)")
			}
		}
		if len(t.Hosts) > maxHostsPerTgt {
			return api.FieldErrorf(f+".hosts", "at most %d hosts", maxHostsPerTgt)
		}
		for j, h := range t.Hosts {
			// Envoy's override host is an IP:port of the cluster: no names.
			if _, err := netip.ParseAddrPort(h); err != nil {
				return api.FieldErrorf(api.Field(f+".hosts", j), "must be IP:port (Envoy pins hosts by address), got %q", h)
			}
		}
		if t.Cluster == "" && len(t.Hosts) == 0 && c.TargetHeader == "" {
			return api.FieldErrorf(f, "steers nowhere: give it a cluster or hosts, or set target_header for routes that match on it")
		}
	}
	if total == 0 {
		return api.FieldErrorf("targets", "the weights add up to 0: at least one target needs a weight > 0")
	}
	if err := api.CheckRange("max_key_length", c.MaxKeyLength, 1, 65536); err != nil {
		return err
	}
	for i, k := range c.Keys {
		if k.IsZero() {
			return api.FieldErrorf(api.Field("keys", i), "must be a variable such as \"$header_x-user-id\"")
		}
	}
	if c.NoKeyTarget != "" && !names[c.NoKeyTarget] {
		return api.FieldErrorf("no_key_target", "no target named %q (targets: %s)", c.NoKeyTarget, targetNames(c.Targets))
	}
	if o := c.Override; o != nil {
		if o.Header == "" && o.Cookie == "" {
			return api.FieldErrorf("override", "needs header or cookie")
		}
		if o.Header != "" {
			if err := api.CheckHeaderName("override.header", o.Header); err != nil {
				return err
			}
		}
		if o.Cookie != "" {
			if err := checkCookieName("override.cookie", o.Cookie); err != nil {
				return err
			}
		}
	}
	if k := c.Cookie; k != nil {
		if err := checkCookieName("cookie.name", k.Name); err != nil {
			return err
		}
		if err := api.CheckRange("cookie.max_age", k.MaxAge.D(), 0, 400*24*time.Hour); err != nil {
			return err
		}
		if k.MaxAge.D()%time.Second != 0 {
			return api.FieldErrorf("cookie.max_age", "must be whole seconds, got %s", k.MaxAge.D())
		}
		for _, a := range []struct{ field, v string }{{"cookie.path", k.Path}, {"cookie.domain", k.Domain}} {
			if strings.ContainsAny(a.v, ";,\r\n\x00 ") {
				return api.FieldErrorf(a.field, "must not contain ';', ',', spaces or control characters")
			}
		}
		if err := api.CheckOneOf("cookie.same_site", k.SameSite, "", "Strict", "Lax", "None"); err != nil {
			return err
		}
		if k.SameSite == "None" && !k.Secure {
			return api.FieldErrorf("cookie.same_site", "None needs secure: true (browsers drop it otherwise)")
		}
	}
	return nil
}

// checkCookieName: an RFC 6265 cookie name is an RFC 9110 token, the same
// alphabet as a header name.
func checkCookieName(field, name string) error {
	if !api.ValidHeaderName(name) {
		return api.FieldErrorf(field, "must be a cookie name (letters, digits and !#$%%&'*+-.^_`|~), got %q", name)
	}
	return nil
}

func targetNames(ts []Target) string {
	n := make([]string, len(ts))
	for i, t := range ts {
		n[i] = t.Name
	}
	return strings.Join(n, ", ")
}
