package jwtauth

import (
	"net/url"
	"strings"
	"time"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
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
	// Consumers maps values of ConsumerClaim to consumers, together with the
	// chain-level consumers that carry a jwt-auth credential. Without either,
	// the consumer is named after the claim value.
	Consumers []Consumer `json:"consumers,omitempty"`
	// hide_credentials, consumer_header (default x-consumer-name) and
	// anonymous_consumer, shared by the authn plugins. A token that is present
	// but invalid is rejected even with anonymous_consumer.
	authn.Options

	rt     *runtime // built by Init (compiled.go)
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

// Credential is what a consumer carries for jwt-auth: in the plugin's own
// consumer list (next to name, group, attributes) and as a chain-level
// consumer's `auth.jwt-auth`.
type Credential struct {
	// ClaimValue is the value of consumer_claim that means this consumer
	// (default: the consumer's name).
	ClaimValue string `json:"claim_value,omitempty"`
}

// claimValue is the value a token's consumer_claim must have for this
// consumer.
func (c *Credential) claimValue(name string) string {
	if c.ClaimValue != "" {
		return c.ClaimValue
	}
	return name
}

// Consumer is an entry of the plugin's own consumer list.
type Consumer struct {
	consumer.Spec
	Credential
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

// newConfig returns the defaults.
func newConfig() any {
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

// Validate checks values; keys are parsed (and so checked) in Init.
func (c *Config) Validate() error {
	if !consumer.SafeHeaderValue(c.Realm) || strings.ContainsAny(c.Realm, `"\`) {
		return fieldErr("realm", "must not contain quotes, backslashes or control characters")
	}
	if _, err := parseAlgs(c.Algorithms, "algorithms"); err != nil {
		return err
	}
	if err := api.CheckRange("leeway", c.Leeway.D(), 0, time.Hour); err != nil {
		return err
	}
	if err := api.CheckRange("max_token_size", c.MaxTokenSize, 64, 1<<20); err != nil {
		return err
	}
	for i, s := range c.From {
		f := api.Field("from", i)
		n := 0
		for _, v := range []string{s.Header, s.Query, s.Cookie} {
			if v != "" {
				n++
			}
		}
		if n != 1 {
			return fieldErr(f, "exactly one of header, query, cookie is required")
		}
		if s.Header != "" && !api.ValidHeaderName(s.Header) {
			return fieldErr(f+".header", "invalid header name %q", s.Header)
		}
		if s.Prefix != "" && s.Header == "" {
			return fieldErr(f+".prefix", "only applies to a header source")
		}
	}
	seen := map[string]bool{}
	for i, fc := range c.ForwardClaims {
		f := api.Field("forward_claims", i)
		if fc.Claim == "" {
			return fieldErr(f+".claim", "required")
		}
		if !api.ValidHeaderName(fc.Header) {
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
	// The own list is checked here too (not only by consumer.Collect in Init),
	// so that offline validation (moectl, which runs no Init) reports it; the
	// chain's consumers are checked against it in Init.
	names, values := consumer.Names{}, claimValues{}
	for i := range c.Consumers {
		cc := &c.Consumers[i]
		f := api.Field("consumers", i)
		if err := names.Add(f, &cc.Spec); err != nil {
			return err
		}
		if err := values.add(f, cc.claimValue(cc.Name)); err != nil {
			return err
		}
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
		if err := api.CheckMin(d.name, d.v.D(), d.min); err != nil {
			return err
		}
	}
	if j.RetryBackoffMax < j.RetryBackoff {
		return fieldErr("jwks.retry_backoff_max", "must not be below retry_backoff")
	}
	return api.CheckMin("jwks.max_size", j.MaxSize, 64)
}

// claimValues maps the claim values of consumers to the entry (its config
// path) that uses each, so two consumers cannot share one.
type claimValues map[string]string

func (v claimValues) add(field, value string) error {
	if other, dup := v[value]; dup {
		return fieldErr(field+".claim_value", "claim value %q is also used by %s", value, describeEntry(other))
	}
	v[value] = field
	return nil
}

// describeEntry says which list a consumer entry is in: "consumers[1]" is
// the plugin's own list, "consumers[3].auth.jwt-auth" the chain's.
func describeEntry(field string) string {
	if strings.Contains(field, ".auth.") {
		return "the chain's " + field
	}
	return "jwt-auth's " + field
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
