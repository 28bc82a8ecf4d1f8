package keyauth

import (
	"fmt"
	"strings"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
)

// Config is the key-auth plugin config. See README.md for the reference.
type Config struct {
	authn.Options
	// Sources is the ordered list of places the key is read from:
	// "header:<name>", "query:<name>" or "cookie:<name>". The first one present
	// wins. Default ["header:apikey", "query:apikey"] (APISIX's defaults).
	Sources []string `json:"sources"`
	// Realm goes into the WWW-Authenticate challenge (Key realm="...").
	Realm string `json:"realm"`
	// MaxKeyBytes refuses longer keys before any lookup (default 1024). It
	// also bounds the keys of every consumer, the chain's included.
	MaxKeyBytes int `json:"max_key_bytes"`
	// Consumers and their keys, next to the chain-level consumers that carry
	// a key-auth credential. A per-route config may omit consumers to keep the
	// parent's index (chain consumers included).
	Consumers []Consumer `json:"consumers"`

	compiled *compiled // built by Init (compiled.go); shared by merged route configs
}

// Credential is what a consumer carries for key-auth: in the plugin's own
// list next to name/group/attributes, or in the chain's consumers as
// `auth: {key-auth: {keys: [...]}}`.
type Credential struct {
	// Keys are the consumer's API keys. Several keys allow rotation: add the
	// new key, roll clients over, remove the old key, each step a config
	// update. 8 bytes at least, no control characters, unique across all
	// consumers.
	Keys []string `json:"keys"`
}

// Consumer is one entry of the plugin's own consumer list.
type Consumer struct {
	consumer.Spec
	Credential
}

const (
	minKeyBytes    = 8
	maxMaxKeyBytes = 16384
)

func newConfig() any {
	return &Config{
		Options:     authn.DefaultOptions(),
		Sources:     []string{"header:apikey", "query:apikey"},
		Realm:       "moe",
		MaxKeyBytes: 1024,
	}
}

// Validate checks the config and the credentials of the plugin's own
// consumers; errors name the field and never print a key. What needs every
// consumer (unique keys, max_key_bytes over the chain's too) is checked in
// Init.
func (c *Config) Validate() error {
	if err := c.Options.Validate(); err != nil {
		return err
	}
	if len(c.Sources) == 0 {
		return api.FieldErrorf("sources", "at least one source is required")
	}
	for i, s := range c.Sources {
		if _, err := parseSource(s); err != nil {
			return api.FieldErrorf(api.Field("sources", i), "%v", err)
		}
	}
	if !consumer.SafeHeaderValue(c.Realm) || strings.ContainsAny(c.Realm, `"\`) {
		return api.FieldErrorf("realm", "must not contain quotes, backslashes or control characters")
	}
	if err := api.CheckRange("max_key_bytes", c.MaxKeyBytes, minKeyBytes, maxMaxKeyBytes); err != nil {
		return err
	}
	for i := range c.Consumers {
		if err := api.Within(api.Field("consumers", i), c.Consumers[i].Credential.Validate()); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks a credential on its own (the framework calls it for the
// chain's consumers, Config.Validate for the plugin's own).
func (k *Credential) Validate() error {
	if len(k.Keys) == 0 {
		return api.FieldErrorf("keys", "at least one key is required")
	}
	for j, key := range k.Keys {
		if err := checkKey(key); err != nil {
			return api.FieldErrorf(api.Field("keys", j), "%v", err)
		}
	}
	return nil
}

// checkKey: keys are compared as bytes; refuse what a client could not send
// in a header or that would be ambiguous (controls, spaces at the ends).
func checkKey(k string) error {
	switch {
	case len(k) < minKeyBytes:
		return fmt.Errorf("too short (at least %d bytes)", minKeyBytes)
	case len(k) > maxMaxKeyBytes:
		return fmt.Errorf("longer than %d bytes", maxMaxKeyBytes)
	case !consumer.SafeHeaderValue(k) || strings.ContainsRune(k, '\t'):
		return fmt.Errorf("contains control characters")
	case strings.TrimSpace(k) != k:
		return fmt.Errorf("has leading or trailing spaces")
	}
	return nil
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

func parseSource(s string) (source, error) {
	kind, name, ok := strings.Cut(s, ":")
	if !ok || name == "" {
		return source{}, fmt.Errorf("%q: want header:<name>, query:<name> or cookie:<name>", s)
	}
	switch kind {
	case "header":
		if !api.ValidHeaderName(name) {
			return source{}, fmt.Errorf("%q: invalid header name", name)
		}
		return source{kind: srcHeader, name: strings.ToLower(name)}, nil
	case "query":
		return source{kind: srcQuery, name: name}, nil
	case "cookie":
		if !api.ValidHeaderName(name) { // cookie names are tokens too
			return source{}, fmt.Errorf("%q: invalid cookie name", name)
		}
		return source{kind: srcCookie, name: name}, nil
	}
	return source{}, fmt.Errorf("%q: unknown source type %q (header, query or cookie)", s, kind)
}

// merge applies a per-route config over its parent: the route's settings win;
// a route that lists no consumers keeps the parent's index (with the chain's
// consumers), so a route can, for example, only add anonymous_consumer.
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
