package hmacauth

import (
	"hash"
	"runtime"
	"strings"
	"time"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
)

// compiled is everything the request path needs, built once per config
// version by Init.
type compiled struct {
	keys       map[string]*key // nil: a per-route config without consumers and no parent
	allowed    map[string]func() hash.Hash
	required   []string
	anonymous  *api.Consumer
	hide       bool
	header     string
	maxHeader  int
	dateHeader string
	nonce      string
	skew       time.Duration
	body       bool
	replay     nonceChecker // nil: replay protection off
	redis      *redisNonces // the Redis store, owned by this config (nil with memory)
	now        func() time.Time
	stats      *authn.Stats
	replies    replies
}

type replies struct {
	missing, malformed, tooLarge, badAlgorithm, badDate, expired *authn.Reply
	invalid, badDigest, replay, badNonce, full, missingOther     *authn.Reply
	unavailable                                                  *authn.Reply
	missingSigned                                                map[string]*authn.Reply
}

// denial reasons (counters moe_hmac_auth_denied_<reason>).
var reasons = []string{"missing", "malformed", "too_large", "bad_algorithm", "missing_header", "expired",
	"unknown_key", "bad_signature", "bad_digest", "replay", "replay_cache_full", "nonce_store_unavailable"}

// Init indexes the keys of the plugin's own consumers and of the chain's
// (consumer.Collect: names unique across both lists), compiles the required
// headers and the replies, and sets up the nonce store: the process-wide
// memory cache, or a reference on the shared Redis client. When the config is
// only checked (env.CheckOnly) there is no nonce store: Validate checked the
// redis section, no client is acquired and the process-wide cache is not
// resized.
func (c *Config) Init(env api.ConfigEnv) error {
	entries, err := authn.RequiredConsumers(env, c.Consumers,
		func(x *Consumer) (*consumer.Spec, *Credential) { return &x.Spec, &x.Credential })
	if err != nil {
		return err
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
		stats:      authn.NewStats(env.Metrics(), reasons...),
		allowed:    map[string]func() hash.Hash{},
	}
	for _, a := range c.AllowedAlgorithms {
		cc.allowed[a] = algorithms[a]
	}
	if len(entries) > 0 {
		if cc.keys, err = buildKeys(entries); err != nil {
			return err
		}
	}
	cc.required = c.requiredHeaders()
	cc.replies = newReplies(c.Realm, cc.required, c.NonceStore.FailureStatus)

	switch {
	case c.NonceHeader == "", env.CheckOnly():
	case c.redisNonces():
		// Last: nothing after it can fail, so a refused config holds no reference.
		if cc.redis, err = newRedisNonces(&c.NonceStore, cc.skew, env); err != nil {
			return err
		}
		cc.replay = cc.redis
		// Destroy is the normal way out; as a backstop for a config dropped
		// without it, release the client when the config is garbage (close is
		// idempotent, and the store does not point back to the config).
		runtime.AddCleanup(c, func(s *redisNonces) { s.close() }, cc.redis)
	default:
		cc.replay = sharedNonces(c.NonceCacheSize)
	}
	c.compiled = cc
	return nil
}

// Destroy runs when Envoy drops this config version: the Redis client is
// closed when no other config (of any plugin) uses it any more.
func (c *Config) Destroy() {
	if c.compiled != nil && c.compiled.redis != nil {
		c.compiled.redis.close()
	}
}

// requiredHeaders are signed_headers plus the date and nonce headers.
func (c *Config) requiredHeaders() []string {
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
	return required
}

func newReplies(realm string, required []string, unavailableStatus int) replies {
	challenge := "Signature realm=" + authn.QuoteParam(realm) + ", headers=" + authn.QuoteParam(strings.Join(required, " "))
	r := func(status int, reason string) *authn.Reply {
		ch := challenge
		if status != 401 {
			ch = ""
		}
		return authn.NewReply(status, ch, reason)
	}
	rs := replies{
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
		unavailable:  r(unavailableStatus, "replay check unavailable, retry later"),
		missingOther: r(401, "missing signed header"),
	}
	rs.missingSigned = make(map[string]*authn.Reply, len(required))
	for _, h := range required {
		rs.missingSigned[h] = r(401, "missing signed header: "+h)
	}
	return rs
}
