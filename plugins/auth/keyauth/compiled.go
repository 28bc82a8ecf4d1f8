package keyauth

import (
	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
)

// compiled is everything the request path needs, built once per config
// version by Init.
type compiled struct {
	sources   []source
	index     *keyIndex // nil: a per-route config without consumers and no parent
	anonymous *api.Consumer
	stats     *authn.Stats
	maxKey    int
	hide      bool
	header    string
	missing   *authn.Reply
	invalid   *authn.Reply
	malformed *authn.Reply
}

// Init indexes the keys of the plugin's own consumers and of the chain's
// (consumer.Collect: names unique across both lists), and builds the replies.
func (c *Config) Init(env api.ConfigEnv) error {
	entries, err := authn.RequiredConsumers(env, c.Consumers,
		func(x *Consumer) (*consumer.Spec, *Credential) { return &x.Spec, &x.Credential })
	if err != nil {
		return err
	}
	cc := &compiled{
		anonymous: c.Anonymous(),
		maxKey:    c.MaxKeyBytes,
		hide:      c.HideCredentials,
		header:    c.ConsumerHeader,
		stats:     authn.NewStats(env.Metrics(), "missing", "invalid", "malformed"),
	}
	for _, s := range c.Sources {
		src, _ := parseSource(s) // validated
		cc.sources = append(cc.sources, src)
	}
	if len(entries) > 0 {
		if cc.index, err = buildIndex(entries, c.MaxKeyBytes); err != nil {
			return err
		}
	}
	challenge := "Key realm=" + authn.QuoteParam(c.Realm)
	cc.missing = authn.NewReply(401, challenge, "missing API key")
	cc.invalid = authn.NewReply(401, challenge, "invalid API key")
	cc.malformed = authn.NewReply(401, challenge, "malformed API key")
	c.compiled = cc
	return nil
}
