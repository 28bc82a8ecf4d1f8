package jwtauth

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/log"
)

// Config of the jwt-auth plugin. See README.md for the reference.
type Config struct {
	// Realm is the realm of the WWW-Authenticate challenge.
	Realm string `json:"realm"`
	// Keys are inline keys (HMAC secrets, PEM or JWK public keys).
	Keys []KeyConfig `json:"keys,omitempty"`
	// JWKS is a key set read from a file or fetched from a URL in the background.
	JWKS JWKSConfig `json:"jwks"`
	// Algorithms allowed at all (default: every supported one). A key never
	// verifies an algorithm its type does not allow, whatever this says.
	Algorithms []string `json:"algorithms,omitempty"`
	// Issuers: when set, "iss" must be one of them.
	Issuers []string `json:"issuers,omitempty"`
	// Audiences: when set, "aud" must contain one of them.
	Audiences []string `json:"audiences,omitempty"`
	// Leeway is the clock skew allowed for exp, nbf and iat (Envoy's
	// clock_skew_seconds, 60s).
	Leeway api.Duration `json:"leeway"`
	// RequireExp rejects tokens without "exp" (Envoy accepts them; so do we by
	// default).
	RequireExp bool `json:"require_exp"`
	// MaxTokenSize rejects longer tokens before decoding them (bytes).
	MaxTokenSize int `json:"max_token_size"`
	// From lists where to look for the token, in order; the first source that
	// is present is used.
	From []TokenSource `json:"from,omitempty"`
	// ForwardClaims copies claims to upstream request headers.
	ForwardClaims []ClaimHeader `json:"forward_claims,omitempty"`
	// ConsumerClaim names the claim that identifies the consumer (e.g. "sub").
	ConsumerClaim string `json:"consumer_claim,omitempty"`
	// Consumers maps values of ConsumerClaim to consumers. Without it, the
	// consumer is named after the claim value.
	Consumers []ConsumerConfig `json:"consumers,omitempty"`
	// hide_credentials, consumer_header (default x-consumer-name) and
	// anonymous_consumer, shared by the authn plugins. A token that is present
	// but invalid is rejected even with anonymous_consumer.
	authn.Options

	rt     *runtime // built by Init
	filter *filter  // shared by all requests of this config: no allocation per request
}

// TokenSource is one place to read the token from: exactly one of header,
// query, cookie.
type TokenSource struct {
	Header string `json:"header,omitempty"`
	// Prefix is stripped from the header value (case-insensitive), e.g.
	// "Bearer ". A header value without it is not a token from this source.
	Prefix string `json:"prefix,omitempty"`
	Query  string `json:"query,omitempty"`
	Cookie string `json:"cookie,omitempty"`
}

// ClaimHeader copies one claim to a header. Claim may be a dotted path into
// nested objects ("realm_access.roles"); strings are sent as is, other values
// as compact JSON.
type ClaimHeader struct {
	Claim  string `json:"claim"`
	Header string `json:"header"`
}

// ConsumerConfig is a consumer known to jwt-auth.
type ConsumerConfig struct {
	authn.ConsumerSpec
	// ClaimValue is the value of consumer_claim that means this consumer
	// (default: Name).
	ClaimValue string `json:"claim_value,omitempty"`
}

// JWKSConfig is a JWK Set from a file or a URL (one of them, or neither).
type JWKSConfig struct {
	URL  string `json:"url,omitempty"`
	File string `json:"file,omitempty"`
	// RefreshInterval between fetches (Envoy's remote_jwks cache_duration, 5m).
	RefreshInterval api.Duration `json:"refresh_interval"`
	// MinRefreshInterval rate-limits the early refresh a token with an unknown
	// kid triggers.
	MinRefreshInterval api.Duration `json:"min_refresh_interval"`
	// FetchTimeout bounds one fetch.
	FetchTimeout api.Duration `json:"fetch_timeout"`
	// RetryBackoff is the first wait after a failed fetch; it doubles up to
	// RetryBackoffMax.
	RetryBackoff    api.Duration `json:"retry_backoff"`
	RetryBackoffMax api.Duration `json:"retry_backoff_max"`
	// MaxSize of the JWKS document in bytes.
	MaxSize int64 `json:"max_size"`
}

func (j *JWKSConfig) enabled() bool { return j.URL != "" || j.File != "" }

// NewConfig returns the defaults.
func NewConfig() any {
	return &Config{
		Realm:        "moe",
		Leeway:       api.Duration(60 * time.Second),
		MaxTokenSize: 8192,
		Options:      authn.DefaultOptions(),
		JWKS: JWKSConfig{
			RefreshInterval:    api.Duration(5 * time.Minute),
			MinRefreshInterval: api.Duration(30 * time.Second),
			FetchTimeout:       api.Duration(5 * time.Second),
			RetryBackoff:       api.Duration(500 * time.Millisecond),
			RetryBackoffMax:    api.Duration(30 * time.Second),
			MaxSize:            1 << 20,
		},
	}
}

func fieldErr(field, format string, args ...any) error {
	return api.FieldErrorf(field, format, args...)
}

// prefixErr puts a parent path before the field of a *api.FieldError.
func prefixErr(prefix string, err error) error {
	if fe, ok := err.(*api.FieldError); ok {
		f := prefix
		if fe.Field != "" {
			f += "." + fe.Field
		}
		return &api.FieldError{Field: f, Reason: fe.Reason}
	}
	return fieldErr(prefix, "%v", err)
}

// validHeaderName: an RFC 9110 token, never a pseudo header.
func validHeaderName(s string) bool { return authn.ValidHeaderName(s) }

// Validate checks values; keys are parsed (and so checked) in Init.
func (c *Config) Validate() error {
	if !authn.SafeHeaderValue(c.Realm) || strings.ContainsAny(c.Realm, `"\`) {
		return fieldErr("realm", "must not contain quotes, backslashes or control characters")
	}
	if _, err := parseAlgs(c.Algorithms, "algorithms"); err != nil {
		return err
	}
	if c.Leeway < 0 || c.Leeway.D() > time.Hour {
		return fieldErr("leeway", "must be between 0 and 1h, got %s", c.Leeway.D())
	}
	if c.MaxTokenSize < 64 || c.MaxTokenSize > 1<<20 {
		return fieldErr("max_token_size", "must be between 64 and 1048576 bytes, got %d", c.MaxTokenSize)
	}
	for i, s := range c.From {
		f := fmt.Sprintf("from[%d]", i)
		n := 0
		for _, v := range []string{s.Header, s.Query, s.Cookie} {
			if v != "" {
				n++
			}
		}
		if n != 1 {
			return fieldErr(f, "exactly one of header, query, cookie is required")
		}
		if s.Header != "" && !validHeaderName(s.Header) {
			return fieldErr(f+".header", "invalid header name %q", s.Header)
		}
		if s.Prefix != "" && s.Header == "" {
			return fieldErr(f+".prefix", "only applies to a header source")
		}
	}
	seen := map[string]bool{}
	for i, fc := range c.ForwardClaims {
		f := fmt.Sprintf("forward_claims[%d]", i)
		if fc.Claim == "" {
			return fieldErr(f+".claim", "required")
		}
		if !validHeaderName(fc.Header) {
			return fieldErr(f+".header", "invalid header name %q", fc.Header)
		}
		if h := strings.ToLower(fc.Header); seen[h] {
			return fieldErr(f+".header", "%q is used twice", fc.Header)
		} else {
			seen[h] = true
		}
	}
	if err := c.Options.Validate(); err != nil {
		return err
	}
	values := map[string]int{}
	for i, cc := range c.Consumers {
		f := fmt.Sprintf("consumers[%d]", i)
		if err := cc.Check(f); err != nil {
			return err
		}
		v := cc.ClaimValue
		if v == "" {
			v = cc.Name
		}
		if j, dup := values[v]; dup {
			return fieldErr(f, "claim value %q is also used by consumers[%d]", v, j)
		}
		values[v] = i
	}
	j := &c.JWKS
	if j.URL != "" && j.File != "" {
		return fieldErr("jwks", "url and file are exclusive")
	}
	if j.URL != "" {
		u, err := url.Parse(j.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fieldErr("jwks.url", "must be an absolute http(s) URL")
		}
	}
	for _, d := range []struct {
		name string
		v    api.Duration
		min  time.Duration
	}{
		{"jwks.refresh_interval", j.RefreshInterval, time.Second},
		{"jwks.min_refresh_interval", j.MinRefreshInterval, 0},
		{"jwks.fetch_timeout", j.FetchTimeout, time.Millisecond},
		{"jwks.retry_backoff", j.RetryBackoff, time.Millisecond},
		{"jwks.retry_backoff_max", j.RetryBackoffMax, time.Millisecond},
	} {
		if d.v.D() < d.min {
			return fieldErr(d.name, "must be at least %s, got %s", d.min, d.v.D())
		}
	}
	if j.RetryBackoffMax < j.RetryBackoff {
		return fieldErr("jwks.retry_backoff_max", "must not be below retry_backoff")
	}
	if j.MaxSize < 64 {
		return fieldErr("jwks.max_size", "must be at least 64 bytes")
	}
	return nil
}

// Init parses keys, indexes consumers, precomputes replies and metrics, and
// starts the JWKS refresher.
func (c *Config) Init(env api.ConfigEnv) error {
	return c.init(env, log.Plugin(env.PluginName()))
}

// init is Init with an injectable logger (Envoy's logger is not there in unit
// tests).
func (c *Config) init(env api.ConfigEnv, logger api.Logger) error {
	rt, err := newRuntime(c, env, logger)
	if err != nil {
		return err
	}
	c.rt = rt
	c.filter = &filter{rt: rt}
	if rt.jwks != nil {
		rt.jwks.start()
	}
	return nil
}

// Destroy stops the JWKS refresher of this config version.
func (c *Config) Destroy() {
	if c.rt != nil && c.rt.jwks != nil && c.rt.ownsJWKS {
		c.rt.jwks.close()
	}
}

// merge applies a per-route config over the parent's: the route's values win,
// but key sources, issuers, audiences, token sources, forwarded claims and the
// consumer claim (and, without a claim, the consumers) it leaves empty are the
// parent's. The result shares the
// parent's JWKS refresher and does not own it.
func merge(parent, route any) any {
	p, r := parent.(*Config), route.(*Config)
	if p.rt == nil || r.rt == nil {
		return r
	}
	out := *r
	rt := *r.rt
	rt.ownsJWKS = false
	if !r.hasKeySource() {
		rt.static, rt.jwks, rt.allowed = p.rt.static, p.rt.jwks, p.rt.allowed
	}
	if len(r.Issuers) == 0 {
		rt.issuers = p.rt.issuers
	}
	if len(r.Audiences) == 0 {
		rt.audiences = p.rt.audiences
	}
	if len(r.From) == 0 {
		rt.from = p.rt.from
	}
	if len(r.ForwardClaims) == 0 {
		rt.forward = p.rt.forward
	}
	if r.ConsumerClaim == "" {
		// A route listing consumers without a claim maps them with the
		// parent's claim; a route listing neither keeps the parent's mapping.
		rt.consumerClaim = p.rt.consumerClaim
		if len(r.Consumers) == 0 {
			rt.consumers = p.rt.consumers
		}
	}
	out.rt = &rt
	out.filter = &filter{rt: &rt}
	return &out
}

func (c *Config) hasKeySource() bool { return len(c.Keys) > 0 || c.JWKS.enabled() }
