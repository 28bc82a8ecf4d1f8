package basicauth

import (
	"fmt"
	"runtime"
	"strings"
	"unicode/utf8"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
)

// Config is the basic-auth plugin config. See README.md for the reference.
type Config struct {
	authn.Options
	// Realm is sent in the challenge: WWW-Authenticate: Basic realm="<realm>", charset="UTF-8".
	Realm string `json:"realm"`
	// MaxHeaderBytes refuses larger Authorization headers before decoding (default 4096).
	MaxHeaderBytes int `json:"max_header_bytes"`
	// CacheSize is how many verified (user, password) pairs of hashed users are
	// remembered so a hot credential is not re-hashed on every request
	// (default 1024, 0 turns the cache off). Only successes are cached.
	CacheSize int `json:"cache_size"`
	// HashConcurrency caps concurrent bcrypt/argon2id verifications (default: the
	// number of CPUs). Cache misses beyond it wait, so a flood of wrong passwords
	// costs at most this many CPUs.
	HashConcurrency int `json:"hash_concurrency"`
	// Consumers with their credentials, next to the chain-level consumers that
	// carry a basic-auth credential. A per-route config may omit them to keep
	// the parent's users (chain consumers included).
	Consumers []Consumer `json:"consumers"`

	compiled *compiled // built by Init (compiled.go); shared by merged route configs
}

// Credential is what a consumer carries for basic-auth: in the plugin's own
// list next to name/group/attributes, or in the chain's consumers as
// `auth: {basic-auth: {...}}`.
type Credential struct {
	// Username is the RFC 7617 user-id; default: the consumer name.
	Username string `json:"username"`
	// Password in clear text, or PasswordHash: a bcrypt ($2a$, $2b$, $2y$) or
	// argon2id ($argon2id$v=19$m=...,t=...,p=...$salt$hash) hash. Exactly one.
	Password     string `json:"password"`
	PasswordHash string `json:"password_hash"`
}

// Consumer is one entry of the plugin's own consumer list.
type Consumer struct {
	consumer.Spec
	Credential
}

const (
	maxCacheSize       = 1 << 20
	maxHashConcurrency = 1024
)

func newConfig() any {
	return &Config{
		Options:         authn.DefaultOptions(),
		Realm:           "moe",
		MaxHeaderBytes:  4096,
		CacheSize:       1024,
		HashConcurrency: runtime.NumCPU(),
	}
}

// Validate checks the config and the credentials of the plugin's own
// consumers; errors name the field and never print a password. What needs
// every consumer (unique user names, user names defaulting to consumer names)
// is checked in Init.
func (c *Config) Validate() error {
	if err := c.Options.Validate(); err != nil {
		return err
	}
	if !consumer.SafeHeaderValue(c.Realm) || strings.ContainsAny(c.Realm, `"\`) {
		return api.FieldErrorf("realm", "must not contain quotes, backslashes or control characters")
	}
	if err := api.CheckRange("max_header_bytes", c.MaxHeaderBytes, 64, 65536); err != nil {
		return err
	}
	if err := api.CheckRange("cache_size", c.CacheSize, 0, maxCacheSize); err != nil {
		return err
	}
	if err := api.CheckRange("hash_concurrency", c.HashConcurrency, 1, maxHashConcurrency); err != nil {
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
// chain's consumers, Config.Validate for the plugin's own). Requests are
// compared in NFC (see nfc); so is config: the user name and a clear-text
// password are normalised here. Password hashes must be computed from the NFC
// form of the password.
func (k *Credential) Validate() error {
	k.Username = nfcString(k.Username)
	k.Password = nfcString(k.Password)
	if k.Username != "" {
		if err := checkUserID(k.Username); err != nil {
			return api.FieldErrorf("username", "%v", err)
		}
	}
	switch {
	case k.Password != "" && k.PasswordHash != "":
		return api.FieldErrorf("", "set password or password_hash, not both")
	case k.Password != "":
		if !validPassword(k.Password) {
			return api.FieldErrorf("password", "contains control characters or invalid UTF-8")
		}
	case k.PasswordHash != "":
		if _, err := parseHash(k.PasswordHash); err != nil {
			return api.FieldErrorf("password_hash", "%v", err)
		}
	default:
		return api.FieldErrorf("", "password or password_hash is required")
	}
	return nil
}

// userID is the credential's user name: its username, or the consumer name.
func (k *Credential) userID(c *api.Consumer) string {
	if k.Username != "" {
		return k.Username
	}
	return nfcString(c.Name)
}

// checkUserID applies RFC 7617's rules: no colon, no control characters; we
// also require valid UTF-8 since the challenge announces charset="UTF-8".
func checkUserID(u string) error {
	switch {
	case strings.IndexByte(u, ':') >= 0:
		return fmt.Errorf("must not contain ':'")
	case !validPassword(u):
		return fmt.Errorf("contains control characters or invalid UTF-8")
	}
	return nil
}

// validPassword: RFC 7617 forbids control characters in user-id and password.
func validPassword(p string) bool {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return utf8.ValidString(p)
}

// Needs: verifying a bcrypt/argon2id hash takes milliseconds of CPU; on a
// cache miss that must not stall Envoy's worker thread (every other stream of
// the worker would wait), so a config with hashed passwords (in its own list
// or the chain's) runs OnReceive off the worker. Plain passwords are checked
// in well under a microsecond, inline.
func (c *Config) Needs() api.Needs {
	n := api.Needs{Phase: api.AfterRoute}
	if c.compiled != nil && c.compiled.users != nil && c.compiled.users.hashed {
		n.MayBlock = api.BlockReceive
	}
	return n
}

// merge applies a per-route config over its parent: the route's settings win;
// a route without consumers keeps the parent's users (the chain's included).
func merge(parent, route any) any {
	p, r := parent.(*Config), route.(*Config)
	if len(r.Consumers) > 0 || p.compiled == nil {
		return r
	}
	out := *r
	cc := *r.compiled
	cc.users = p.compiled.users
	out.compiled = &cc
	out.Consumers = p.Consumers
	return &out
}
