package hmacauth

import (
	"crypto/sha256"
	"crypto/sha512"
	"hash"
	"strings"
	"time"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/plugins/internal/redisclient"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
)

// Config is the hmac-auth plugin config. See README.md for the reference.
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
	// NonceCacheSize bounds the in-process replay cache (nonce_store type
	// memory; entries, process-wide; default 200000, about 10 MB). When it is
	// full of unexpired nonces, new signed requests get 503 rather than losing
	// replay protection.
	NonceCacheSize int `json:"nonce_cache_size"`
	// NonceStore is where nonces are remembered: in this process (default) or
	// in Redis, shared by every instance.
	NonceStore NonceStore `json:"nonce_store"`
	// ValidateRequestBody buffers request bodies (up to MaxBodyBytes) and checks
	// them against a signed Digest (RFC 3230: "SHA-256=<base64>") or
	// Content-Digest (RFC 9530: "sha-256=:<base64>:") header. A request with a
	// body must then carry one.
	ValidateRequestBody bool `json:"validate_request_body"`
	// MaxBodyBytes caps the buffered body (default 1 MiB; larger gets 413).
	MaxBodyBytes int `json:"max_body_bytes"`
	// MaxHeaderBytes refuses larger Authorization headers (default 8192).
	MaxHeaderBytes int `json:"max_header_bytes"`
	// Consumers and their signing keys, next to the chain-level consumers that
	// carry an hmac-auth credential. A per-route config may omit consumers to
	// keep the parent's keys (chain consumers included).
	Consumers []Consumer `json:"consumers"`

	compiled *compiled // built by Init (compiled.go); shared by merged route configs
}

// NonceStore says where nonces are kept.
type NonceStore struct {
	// Type is "memory" (default: this process only) or "redis" (every
	// instance pointing at the same Redis refuses a nonce seen by any of them).
	Type string `json:"type"`
	// Redis is the server with type redis. Configs with an equal redis section
	// share one client (plugins/internal/redisclient), also with other plugins.
	Redis redisclient.Config `json:"redis"`
	// KeyPrefix namespaces the nonce keys in Redis.
	KeyPrefix string `json:"key_prefix"`
	// FailurePolicy is what a signed request gets when Redis fails or times
	// out: "fail_closed" (default: answer FailureStatus; a replay check that
	// silently passes would defeat it) or "fail_open" (let it through without
	// the replay check).
	FailurePolicy string `json:"failure_policy"`
	// FailureStatus answers requests under fail_closed while Redis fails.
	FailureStatus int `json:"failure_status"`
}

// Credential is what a consumer carries for hmac-auth: in the plugin's own
// list next to name/group/attributes, or in the chain's consumers as
// `auth: {hmac-auth: {keys: [...]}}`.
type Credential struct {
	// Keys are the consumer's signing keys; several allow rotation.
	Keys []Key `json:"keys"`
}

// Key is a shared secret and the keyId clients name it by.
type Key struct {
	// KeyID is what clients send in keyId="..."; unique across all consumers.
	KeyID string `json:"key_id"`
	// Secret is the HMAC key, used as raw bytes (never logged).
	Secret string `json:"secret"`
}

// Consumer is one entry of the plugin's own consumer list.
type Consumer struct {
	consumer.Spec
	Credential
}

const (
	storeMemory = "memory"
	storeRedis  = "redis"

	failClosed = "fail_closed"
	failOpen   = "fail_open"

	targetToken       = "@request-target"
	cavageTargetToken = "(request-target)" // draft-cavage spelling, accepted too
	maxSignedHeaders  = 32
	minSecretBytes    = 16
	maxKeyIDBytes     = 256
	maxNonceBytes     = 256
)

var algorithms = map[string]func() hash.Hash{
	"hmac-sha256": sha256.New,
	"hmac-sha512": sha512.New,
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
		NonceStore: NonceStore{
			Type:          storeMemory,
			Redis:         redisclient.DefaultConfig(),
			KeyPrefix:     "moe:hmac-auth:nonce:",
			FailurePolicy: failClosed,
			FailureStatus: 503,
		},
		MaxBodyBytes:   1 << 20,
		MaxHeaderBytes: 8192,
	}
}

// Validate checks the config and the credentials of the plugin's own
// consumers; errors name the field and never print a secret. What needs
// every consumer (unique key ids) is checked in Init.
func (c *Config) Validate() error {
	if err := c.Options.Validate(); err != nil {
		return err
	}
	if !consumer.SafeHeaderValue(c.Realm) || strings.ContainsAny(c.Realm, `"\`) {
		return api.FieldErrorf("realm", "must not contain quotes, backslashes or control characters")
	}
	if len(c.AllowedAlgorithms) == 0 {
		return api.FieldErrorf("allowed_algorithms", "at least one algorithm is required")
	}
	for i, a := range c.AllowedAlgorithms {
		if err := api.CheckOneOf(api.Field("allowed_algorithms", i), a, "hmac-sha256", "hmac-sha512"); err != nil {
			return err
		}
	}
	c.DateHeader = strings.ToLower(c.DateHeader)
	if !api.ValidHeaderName(c.DateHeader) {
		return api.FieldErrorf("date_header", "%q is not a valid header name", c.DateHeader)
	}
	c.NonceHeader = strings.ToLower(c.NonceHeader)
	if c.NonceHeader != "" && !api.ValidHeaderName(c.NonceHeader) {
		return api.FieldErrorf("nonce_header", "%q is not a valid header name", c.NonceHeader)
	}
	for i, h := range c.SignedHeaders {
		h = strings.ToLower(h)
		c.SignedHeaders[i] = h
		if h != targetToken && h != cavageTargetToken && !api.ValidHeaderName(h) {
			return api.FieldErrorf(api.Field("signed_headers", i), "%q is not a header name or @request-target", h)
		}
	}
	if err := api.CheckRange("clock_skew", c.ClockSkew.D(), time.Second, 24*time.Hour); err != nil {
		return err
	}
	if err := api.CheckRange("nonce_cache_size", c.NonceCacheSize, 1000, 50_000_000); err != nil {
		return err
	}
	if err := c.NonceStore.check("nonce_store", c.NonceHeader); err != nil {
		return err
	}
	if err := api.CheckRange("max_body_bytes", c.MaxBodyBytes, 1, 64<<20); err != nil {
		return err
	}
	if err := api.CheckRange("max_header_bytes", c.MaxHeaderBytes, 128, 65536); err != nil {
		return err
	}
	for i := range c.Consumers {
		if err := api.Within(api.Field("consumers", i), c.Consumers[i].Credential.Validate()); err != nil {
			return err
		}
	}
	return nil
}

func (s *NonceStore) check(field, nonceHeader string) error {
	if err := api.CheckOneOf(api.Field(field, "type"), s.Type, storeMemory, storeRedis); err != nil {
		return err
	}
	if s.Type == storeMemory {
		if len(s.Redis.Addrs) > 0 {
			return api.FieldErrorf(api.Field(field, "redis"), "is only used with type: redis")
		}
		return nil
	}
	if nonceHeader == "" {
		return api.FieldErrorf(api.Field(field, "type"), "redis needs replay protection on (nonce_header is empty)")
	}
	if strings.ContainsAny(s.KeyPrefix, "{}") {
		// A hash tag in the prefix would put every nonce on one Redis Cluster slot.
		return api.FieldErrorf(api.Field(field, "key_prefix"), "must not contain '{' or '}', got %q", s.KeyPrefix)
	}
	if err := api.CheckOneOf(api.Field(field, "failure_policy"), s.FailurePolicy, failClosed, failOpen); err != nil {
		return err
	}
	if err := api.CheckStatus(api.Field(field, "failure_status"), s.FailureStatus); err != nil {
		return err
	}
	return s.Redis.Check(api.Field(field, "redis"))
}

// Validate checks a credential on its own (the framework calls it for the
// chain's consumers, Config.Validate for the plugin's own).
func (k *Credential) Validate() error {
	if len(k.Keys) == 0 {
		return api.FieldErrorf("keys", "at least one key is required")
	}
	for j, key := range k.Keys {
		kf := api.Field("keys", j)
		id := key.KeyID
		if id == "" || len(id) > maxKeyIDBytes || !consumer.SafeHeaderValue(id) || strings.ContainsAny(id, `"\`) {
			return api.FieldErrorf(api.Field(kf, "key_id"), "must be 1-%d printable characters without quotes or backslashes", maxKeyIDBytes)
		}
		if len(key.Secret) < minSecretBytes {
			return api.FieldErrorf(api.Field(kf, "secret"), "too short (at least %d bytes; 32 random bytes recommended)", minSecretBytes)
		}
	}
	return nil
}

// Needs: with validate_request_body the body must be buffered before
// OnReceive (a proxy cannot know before the headers arrive whether a request
// carries a digest, so the whole config asks for it). With the Redis nonce
// store the request phase calls Redis, so it runs off Envoy's worker thread;
// the memory store is a map insert and stays inline.
func (c *Config) Needs() api.Needs {
	n := api.Needs{Phase: api.AfterRoute}
	if c.ValidateRequestBody {
		n.RequestBody = api.WholeBody
		n.MaxRequestBody = c.MaxBodyBytes
	}
	if c.redisNonces() {
		n.MayBlock = api.BlockReceive
	}
	return n
}

// redisNonces reports whether nonces go to Redis.
func (c *Config) redisNonces() bool {
	return c.NonceHeader != "" && c.NonceStore.Type == storeRedis
}

// merge applies a per-route config over its parent: the route's settings win
// (its nonce store included); a route without consumers keeps the parent's
// keys (the chain's included).
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
