package basicauth

import (
	"crypto/rand"
	"fmt"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
)

// compiled is everything the request path needs, built once per config
// version by Init.
type compiled struct {
	users     *users // nil: a per-route config without consumers and no parent
	anonymous *api.Consumer
	hide      bool
	header    string
	maxHeader int
	stats     *authn.Stats
	missing   *authn.Reply
	malformed *authn.Reply
	tooLarge  *authn.Reply
	invalid   *authn.Reply
}

// Init builds the user table of the plugin's own consumers and the chain's
// (consumer.Collect: names unique across both lists), the cache and the
// replies.
func (c *Config) Init(env api.ConfigEnv) error {
	entries, err := authn.RequiredConsumers(env, c.Consumers,
		func(x *Consumer) (*consumer.Spec, *Credential) { return &x.Spec, &x.Credential })
	if err != nil {
		return err
	}
	cc := &compiled{
		anonymous: c.Anonymous(),
		hide:      c.HideCredentials,
		header:    c.ConsumerHeader,
		maxHeader: c.MaxHeaderBytes,
		stats:     authn.NewStats(env.Metrics(), "missing", "malformed", "too_large", "invalid", "canceled"),
	}
	if len(entries) > 0 {
		var key [32]byte
		if _, err := rand.Read(key[:]); err != nil {
			return fmt.Errorf("cache key: %w", err)
		}
		if cc.users, err = buildUsers(entries, c.CacheSize, c.HashConcurrency, key); err != nil {
			return err
		}
	}
	challenge := "Basic realm=" + authn.QuoteParam(c.Realm) + `, charset="UTF-8"`
	cc.missing = authn.NewReply(401, challenge, "missing credentials")
	cc.malformed = authn.NewReply(401, challenge, "malformed credentials")
	cc.tooLarge = authn.NewReply(401, challenge, "credentials too large")
	cc.invalid = authn.NewReply(401, challenge, "invalid credentials")
	c.compiled = cc
	return nil
}
