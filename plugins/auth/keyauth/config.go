package keyauth

import (
	"fmt"
	"strings"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
)

// Config is the key-auth plugin config.
type Config struct {
	authn.Options
	// Sources is the ordered list of places the key is read from:
	// "header:<name>", "query:<name>" or "cookie:<name>". The first one present
	// wins. Default ["header:apikey", "query:apikey"] (APISIX's defaults).
	Sources []string `json:"sources"`
	// Realm goes into the WWW-Authenticate challenge (Key realm="...").
	Realm string `json:"realm"`
	// MaxKeyBytes refuses longer keys before any lookup (default 1024).
	MaxKeyBytes int `json:"max_key_bytes"`
	// Consumers and their keys. Several keys per consumer allow rotation: add the
	// new key, roll clients over, remove the old key, each step a config update.
	// A per-route config may omit consumers to keep the parent's.
	Consumers []Consumer `json:"consumers"`

	compiled *compiled
}

// Consumer is one consumer and its API keys.
type Consumer struct {
	authn.ConsumerSpec
	Keys []string `json:"keys"`
}

const (
	srcHeader = iota
	srcQuery
	srcCookie
)

type source struct {
	kind int
	name string // header names lower case
}

// compiled is everything the request path needs, built once per config.
type compiled struct {
	sources   []source
	index     *keyIndex
	anonymous *api.Consumer
	stats     *authn.Stats
	maxKey    int
	hide      bool
	header    string
	missing   *authn.Reply
	invalid   *authn.Reply
	malformed *authn.Reply
}

func newConfig() any {
	return &Config{
		Options:     authn.DefaultOptions(),
		Sources:     []string{"header:apikey", "query:apikey"},
		Realm:       "moe",
		MaxKeyBytes: 1024,
	}
}

// Validate checks the config; errors name the field.
func (c *Config) Validate() error {
	if err := c.Options.Validate(); err != nil {
		return err
	}
	if len(c.Sources) == 0 {
		return api.FieldErrorf("sources", "at least one source is required")
	}
	for i, s := range c.Sources {
		if _, err := parseSource(s); err != nil {
			return api.FieldErrorf(fmt.Sprintf("sources[%d]", i), "%v", err)
		}
	}
	if !authn.SafeHeaderValue(c.Realm) || strings.ContainsAny(c.Realm, `"\`) {
		return api.FieldErrorf("realm", "must not contain quotes, backslashes or control characters")
	}
	if c.MaxKeyBytes < 8 || c.MaxKeyBytes > 16384 {
		return api.FieldErrorf("max_key_bytes", "must be between 8 and 16384, got %d", c.MaxKeyBytes)
	}
	seen := map[authn.Digest]string{}
	names := authn.ConsumerNames{}
	for i, cs := range c.Consumers {
		field := fmt.Sprintf("consumers[%d]", i)
		if err := names.Add(i, field, &cs.ConsumerSpec); err != nil {
			return err
		}
		if len(cs.Keys) == 0 {
			return api.FieldErrorf(field+".keys", "at least one key is required")
		}
		for j, k := range cs.Keys {
			kf := fmt.Sprintf("%s.keys[%d]", field, j)
			if err := checkKey(k, c.MaxKeyBytes); err != nil {
				return api.FieldErrorf(kf, "%v", err)
			}
			d := authn.DigestOf(k)
			if other, dup := seen[d]; dup {
				// Never print the key itself: config errors end up in logs.
				return api.FieldErrorf(kf, "same key as %s (keys must be unique)", other)
			}
			seen[d] = kf
		}
	}
	return nil
}

// checkKey: keys are compared as bytes; refuse what a client could not send
// in a header or that would be ambiguous (controls, spaces at the ends).
func checkKey(k string, max int) error {
	switch {
	case len(k) < 8:
		return fmt.Errorf("too short (at least 8 bytes)")
	case len(k) > max:
		return fmt.Errorf("longer than max_key_bytes (%d)", max)
	case !authn.SafeHeaderValue(k) || strings.ContainsRune(k, '\t'):
		return fmt.Errorf("contains control characters")
	case strings.TrimSpace(k) != k:
		return fmt.Errorf("has leading or trailing spaces")
	}
	return nil
}

func parseSource(s string) (source, error) {
	kind, name, ok := strings.Cut(s, ":")
	if !ok || name == "" {
		return source{}, fmt.Errorf("%q: want header:<name>, query:<name> or cookie:<name>", s)
	}
	switch kind {
	case "header":
		if !authn.ValidHeaderName(name) {
			return source{}, fmt.Errorf("%q: invalid header name", name)
		}
		return source{kind: srcHeader, name: strings.ToLower(name)}, nil
	case "query":
		return source{kind: srcQuery, name: name}, nil
	case "cookie":
		if !authn.ValidHeaderName(name) { // cookie names are tokens too
			return source{}, fmt.Errorf("%q: invalid cookie name", name)
		}
		return source{kind: srcCookie, name: name}, nil
	}
	return source{}, fmt.Errorf("%q: unknown source type %q (header, query or cookie)", s, kind)
}

// Init builds the key index and the replies once per config version.
func (c *Config) Init(env api.ConfigEnv) error {
	if len(c.Consumers) == 0 && !env.IsRoute() {
		return api.FieldErrorf("consumers", "at least one consumer is required (a per-route config may omit them to keep the parent's)")
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
	if len(c.Consumers) > 0 {
		cc.index = buildIndex(c.Consumers)
	}
	challenge := "Key realm=" + authn.QuoteParam(c.Realm)
	cc.missing = authn.NewReply(401, challenge, "missing API key")
	cc.invalid = authn.NewReply(401, challenge, "invalid API key")
	cc.malformed = authn.NewReply(401, challenge, "malformed API key")
	c.compiled = cc
	return nil
}

// merge applies a per-route config over its parent: the route's settings win;
// a route that lists no consumers keeps the parent's keys, so a route can, for
// example, only add anonymous_consumer.
func merge(parent, route any) any {
	p, r := parent.(*Config), route.(*Config)
	if len(r.Consumers) > 0 || p.compiled == nil {
		return r
	}
	out := *r
	cc := *r.compiled
	cc.index = p.compiled.index
	out.compiled = &cc
	out.Consumers = p.Consumers
	return &out
}
