package hmacauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"strings"
	"sync"
	"time"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
)

// Config is the hmac-auth plugin config.
type Config struct {
	authn.Options
	// Realm goes into the challenge: WWW-Authenticate: Signature realm="..", headers="..".
	Realm string `json:"realm"`
	// AllowedAlgorithms the client may name in algorithm="..." (default both).
	AllowedAlgorithms []string `json:"allowed_algorithms"`
	// SignedHeaders must all be covered by the client's headers="..." list
	// (default ["@request-target", "date"]). date_header and nonce_header are
	// added automatically.
	SignedHeaders []string `json:"signed_headers"`
	// DateHeader carries the signing time: an HTTP date (IMF-fixdate) or unix
	// seconds. Default "date".
	DateHeader string `json:"date_header"`
	// ClockSkew is how far the date may be from the proxy's clock, both ways
	// (default 300s, at least 1s).
	ClockSkew api.Duration `json:"clock_skew"`
	// NonceHeader carries a unique value per request for replay protection
	// (default "x-nonce"; "" turns replay protection off). A (keyId, nonce) pair
	// is refused a second time until the date plus clock_skew has passed.
	NonceHeader string `json:"nonce_header"`
	// NonceCacheSize bounds the replay cache (entries, process-wide; default
	// 200000, about 10 MB). When it is full of unexpired nonces, new signed
	// requests get 503 rather than losing replay protection.
	NonceCacheSize int `json:"nonce_cache_size"`
	// ValidateRequestBody buffers request bodies (up to MaxBodyBytes) and checks
	// them against a signed Digest (RFC 3230: "SHA-256=<base64>") or
	// Content-Digest (RFC 9530: "sha-256=:<base64>:") header. A request with a
	// body must then carry one.
	ValidateRequestBody bool `json:"validate_request_body"`
	// MaxBodyBytes caps the buffered body (default 1 MiB; larger gets 413).
	MaxBodyBytes int `json:"max_body_bytes"`
	// MaxHeaderBytes refuses larger Authorization headers (default 8192).
	MaxHeaderBytes int `json:"max_header_bytes"`
	// Consumers and their signing keys. Several keys per consumer allow
	// rotation. A per-route config may omit consumers to keep the parent's.
	Consumers []Consumer `json:"consumers"`

	compiled *compiled
}

// Consumer is one consumer and its keys.
type Consumer struct {
	authn.ConsumerSpec
	Keys []Key `json:"keys"`
}

// Key is a shared secret and the keyId clients name it by.
type Key struct {
	KeyID  string `json:"key_id"`
	Secret string `json:"secret"`
}

func newConfig() any {
	return &Config{
		Options:           authn.DefaultOptions(),
		Realm:             "moe",
		AllowedAlgorithms: []string{"hmac-sha256", "hmac-sha512"},
		SignedHeaders:     []string{targetToken, "date"},
		DateHeader:        "date",
		ClockSkew:         api.Duration(300 * time.Second),
		NonceHeader:       "x-nonce",
		NonceCacheSize:    200000,
		MaxBodyBytes:      1 << 20,
		MaxHeaderBytes:    8192,
	}
}

const (
	targetToken       = "@request-target"
	cavageTargetToken = "(request-target)" // draft-cavage spelling, accepted too
	maxSignedHeaders  = 32
	minSecretBytes    = 16
)

var algorithms = map[string]func() hash.Hash{
	"hmac-sha256": sha256.New,
	"hmac-sha512": sha512.New,
}

// Validate checks the config; errors name the field and never print a secret.
func (c *Config) Validate() error {
	if err := c.Options.Validate(); err != nil {
		return err
	}
	if !authn.SafeHeaderValue(c.Realm) || strings.ContainsAny(c.Realm, `"\`) {
		return api.FieldErrorf("realm", "must not contain quotes, backslashes or control characters")
	}
	if len(c.AllowedAlgorithms) == 0 {
		return api.FieldErrorf("allowed_algorithms", "at least one algorithm is required")
	}
	for i, a := range c.AllowedAlgorithms {
		if algorithms[a] == nil {
			return api.FieldErrorf(fmt.Sprintf("allowed_algorithms[%d]", i), "unknown algorithm %q (hmac-sha256 or hmac-sha512)", a)
		}
	}
	c.DateHeader = strings.ToLower(c.DateHeader)
	if !authn.ValidHeaderName(c.DateHeader) {
		return api.FieldErrorf("date_header", "%q is not a valid header name", c.DateHeader)
	}
	c.NonceHeader = strings.ToLower(c.NonceHeader)
	if c.NonceHeader != "" && !authn.ValidHeaderName(c.NonceHeader) {
		return api.FieldErrorf("nonce_header", "%q is not a valid header name", c.NonceHeader)
	}
	for i, h := range c.SignedHeaders {
		h = strings.ToLower(h)
		c.SignedHeaders[i] = h
		if h != targetToken && h != cavageTargetToken && !authn.ValidHeaderName(h) {
			return api.FieldErrorf(fmt.Sprintf("signed_headers[%d]", i), "%q is not a header name or @request-target", h)
		}
	}
	if d := c.ClockSkew.D(); d < time.Second || d > 24*time.Hour {
		return api.FieldErrorf("clock_skew", "must be between 1s and 24h, got %v", d)
	}
	if c.NonceCacheSize < 1000 || c.NonceCacheSize > 50_000_000 {
		return api.FieldErrorf("nonce_cache_size", "must be between 1000 and 50000000, got %d", c.NonceCacheSize)
	}
	if c.MaxBodyBytes < 1 || c.MaxBodyBytes > 64<<20 {
		return api.FieldErrorf("max_body_bytes", "must be between 1 and 67108864, got %d", c.MaxBodyBytes)
	}
	if c.MaxHeaderBytes < 128 || c.MaxHeaderBytes > 65536 {
		return api.FieldErrorf("max_header_bytes", "must be between 128 and 65536, got %d", c.MaxHeaderBytes)
	}
	names := authn.ConsumerNames{}
	ids := map[string]string{}
	for i := range c.Consumers {
		cs := &c.Consumers[i]
		field := fmt.Sprintf("consumers[%d]", i)
		if err := names.Add(i, field, &cs.ConsumerSpec); err != nil {
			return err
		}
		if len(cs.Keys) == 0 {
			return api.FieldErrorf(field+".keys", "at least one key is required")
		}
		for j, k := range cs.Keys {
			kf := fmt.Sprintf("%s.keys[%d]", field, j)
			if k.KeyID == "" || len(k.KeyID) > 256 || !authn.SafeHeaderValue(k.KeyID) || strings.ContainsAny(k.KeyID, `"\`) {
				return api.FieldErrorf(kf+".key_id", "must be 1-256 printable characters without quotes or backslashes")
			}
			if other, dup := ids[k.KeyID]; dup {
				return api.FieldErrorf(kf+".key_id", "key id %q is also %s", k.KeyID, other)
			}
			ids[k.KeyID] = kf
			if len(k.Secret) < minSecretBytes {
				return api.FieldErrorf(kf+".secret", "too short (at least %d bytes; 32 random bytes recommended)", minSecretBytes)
			}
		}
	}
	return nil
}

// Init compiles keys, required headers, replies and the replay cache.
func (c *Config) Init(env api.ConfigEnv) error {
	if len(c.Consumers) == 0 && !env.IsRoute() {
		return api.FieldErrorf("consumers", "at least one consumer is required (a per-route config may omit them to keep the parent's)")
	}
	cc := &compiled{
		anonymous:  c.Anonymous(),
		hide:       c.HideCredentials,
		header:     c.ConsumerHeader,
		maxHeader:  c.MaxHeaderBytes,
		dateHeader: c.DateHeader,
		nonce:      c.NonceHeader,
		skew:       c.ClockSkew.D(),
		body:       c.ValidateRequestBody,
		now:        time.Now,
		stats: authn.NewStats(env.Metrics(), "missing", "malformed", "too_large", "bad_algorithm",
			"missing_header", "expired", "unknown_key", "bad_signature", "bad_digest", "replay", "replay_cache_full"),
		allowed: map[string]func() hash.Hash{},
	}
	for _, a := range c.AllowedAlgorithms {
		cc.allowed[a] = algorithms[a]
	}
	required := append([]string(nil), c.SignedHeaders...)
	add := func(h string) {
		for _, r := range required {
			if r == h {
				return
			}
		}
		required = append(required, h)
	}
	add(c.DateHeader)
	if c.NonceHeader != "" {
		add(c.NonceHeader)
	}
	cc.required = required
	if len(c.Consumers) > 0 {
		cc.keys = buildKeys(c.Consumers)
	}
	if c.NonceHeader != "" {
		cc.replay = sharedNonces(c.NonceCacheSize)
	}
	challenge := "Signature realm=" + authn.QuoteParam(c.Realm) + ", headers=" + authn.QuoteParam(strings.Join(required, " "))
	r := func(status int, reason string) *authn.Reply {
		ch := challenge
		if status != 401 {
			ch = ""
		}
		return authn.NewReply(status, ch, reason)
	}
	cc.replies = replies{
		missing:      r(401, "missing signature"),
		malformed:    r(401, "malformed signature header"),
		tooLarge:     r(401, "signature header too large"),
		badAlgorithm: r(401, "unsupported signature algorithm"),
		badDate:      r(401, "malformed date header"),
		expired:      r(401, "request expired or clock skew too large"),
		invalid:      r(401, "invalid signature"),
		badDigest:    r(401, "body digest missing or mismatched"),
		replay:       r(401, "replayed request (nonce already used)"),
		badNonce:     r(401, "malformed nonce"),
		full:         r(503, "replay cache full, retry later"),
	}
	cc.replies.missingSigned = make(map[string]*authn.Reply, len(required))
	for _, h := range required {
		cc.replies.missingSigned[h] = r(401, "missing signed header: "+h)
	}
	cc.replies.missingOther = r(401, "missing signed header")
	c.compiled = cc
	return nil
}

// Needs: with validate_request_body the body must be buffered before
// OnReceive; a proxy cannot know before the headers arrive whether a request
// carries a digest, so the whole config asks for it.
func (c *Config) Needs() api.Needs {
	n := api.Needs{Phase: api.AfterRoute}
	if c.ValidateRequestBody {
		n.RequestBody = api.WholeBody
		n.MaxRequestBody = c.MaxBodyBytes
	}
	return n
}

// key is one signing key, with a pool of keyed HMAC states per algorithm so
// the request path does not rebuild them (hmac.New allocates and hashes the key).
type key struct {
	id       string
	consumer *api.Consumer
	pools    map[string]*sync.Pool
}

// Pools exist for every algorithm, not only the allowed ones, so a per-route
// config allowing another algorithm can share its parent's keys.
func buildKeys(cs []Consumer) map[string]*key {
	m := map[string]*key{}
	for i := range cs {
		consumer := cs[i].Consumer()
		for _, k := range cs[i].Keys {
			kk := &key{id: k.KeyID, consumer: consumer, pools: map[string]*sync.Pool{}}
			secret := []byte(k.Secret)
			for a, newHash := range algorithms {
				kk.pools[a] = &sync.Pool{New: func() any { return &macState{mac: hmac.New(newHash, secret)} }}
			}
			m[k.KeyID] = kk
		}
	}
	return m
}

// macState is a pooled keyed HMAC and the scratch space of one verification.
type macState struct {
	mac hash.Hash
	buf []byte // signing string
	sum []byte
	sig [96]byte // room for the base64 decode of a SHA-512 MAC (88 chars -> 66)
}

// merge applies a per-route config over its parent: the route's settings win;
// a route without consumers keeps the parent's keys.
func merge(parent, route any) any {
	p, r := parent.(*Config), route.(*Config)
	if len(r.Consumers) > 0 || p.compiled == nil {
		return r
	}
	out := *r
	cc := *r.compiled
	cc.keys = p.compiled.keys
	out.compiled = &cc
	out.Consumers = p.Consumers
	return &out
}
