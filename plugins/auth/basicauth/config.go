package basicauth

import (
	"crypto/rand"
	"fmt"
	"runtime"
	"strings"
	"unicode/utf8"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
)

// Config is the basic-auth plugin config.
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
	// Consumers with their credentials. A per-route config may omit them to keep
	// the parent's.
	Consumers []Consumer `json:"consumers"`

	compiled *compiled
}

// Consumer is one consumer and its user name and password.
type Consumer struct {
	authn.ConsumerSpec
	// Username defaults to the consumer name.
	Username string `json:"username"`
	// Password in clear text, or PasswordHash: a bcrypt ($2a$, $2b$, $2y$) or
	// argon2id ($argon2id$v=19$m=...,t=...,p=...$salt$hash) hash. Exactly one.
	Password     string `json:"password"`
	PasswordHash string `json:"password_hash"`
}

func newConfig() any {
	return &Config{
		Options:         authn.DefaultOptions(),
		Realm:           "moe",
		MaxHeaderBytes:  4096,
		CacheSize:       1024,
		HashConcurrency: runtime.NumCPU(),
	}
}

// Validate checks the config; errors name the field and never print a password.
func (c *Config) Validate() error {
	if err := c.Options.Validate(); err != nil {
		return err
	}
	if !authn.SafeHeaderValue(c.Realm) || strings.ContainsAny(c.Realm, `"\`) {
		return api.FieldErrorf("realm", "must not contain quotes, backslashes or control characters")
	}
	if c.MaxHeaderBytes < 64 || c.MaxHeaderBytes > 65536 {
		return api.FieldErrorf("max_header_bytes", "must be between 64 and 65536, got %d", c.MaxHeaderBytes)
	}
	if c.CacheSize < 0 || c.CacheSize > 1<<20 {
		return api.FieldErrorf("cache_size", "must be between 0 and 1048576, got %d", c.CacheSize)
	}
	if c.HashConcurrency < 1 || c.HashConcurrency > 1024 {
		return api.FieldErrorf("hash_concurrency", "must be between 1 and 1024, got %d", c.HashConcurrency)
	}
	names := authn.ConsumerNames{}
	users := map[string]int{}
	for i := range c.Consumers {
		cs := &c.Consumers[i]
		field := fmt.Sprintf("consumers[%d]", i)
		if err := names.Add(i, field, &cs.ConsumerSpec); err != nil {
			return err
		}
		if cs.Username == "" {
			cs.Username = cs.Name
		}
		// Requests are compared in NFC (see nfc); so is config. Password hashes
		// must be computed from the NFC form of the password.
		cs.Username = nfcString(cs.Username)
		cs.Password = nfcString(cs.Password)
		if err := checkUserID(cs.Username); err != nil {
			return api.FieldErrorf(field+".username", "%v", err)
		}
		if j, dup := users[cs.Username]; dup {
			return api.FieldErrorf(field+".username", "user %q is also consumers[%d]", cs.Username, j)
		}
		users[cs.Username] = i
		switch {
		case cs.Password != "" && cs.PasswordHash != "":
			return api.FieldErrorf(field, "set password or password_hash, not both")
		case cs.Password != "":
			if !validPassword(cs.Password) {
				return api.FieldErrorf(field+".password", "contains control characters or invalid UTF-8")
			}
		case cs.PasswordHash != "":
			if _, err := parseHash(cs.PasswordHash); err != nil {
				return api.FieldErrorf(field+".password_hash", "%v", err)
			}
		default:
			return api.FieldErrorf(field, "password or password_hash is required")
		}
	}
	return nil
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

// Init builds the user table, the cache and the replies.
func (c *Config) Init(env api.ConfigEnv) error {
	if len(c.Consumers) == 0 && !env.IsRoute() {
		return api.FieldErrorf("consumers", "at least one consumer is required (a per-route config may omit them to keep the parent's)")
	}
	cc := &compiled{
		anonymous: c.Anonymous(),
		hide:      c.HideCredentials,
		header:    c.ConsumerHeader,
		maxHeader: c.MaxHeaderBytes,
		stats:     authn.NewStats(env.Metrics(), "missing", "malformed", "too_large", "invalid", "canceled"),
	}
	if len(c.Consumers) > 0 {
		var key [32]byte
		if _, err := rand.Read(key[:]); err != nil {
			return fmt.Errorf("cache key: %w", err)
		}
		users, err := buildUsers(c.Consumers, c.CacheSize, c.HashConcurrency, key)
		if err != nil {
			return err
		}
		cc.users = users
	}
	challenge := "Basic realm=" + authn.QuoteParam(c.Realm) + `, charset="UTF-8"`
	cc.missing = authn.NewReply(401, challenge, "missing credentials")
	cc.malformed = authn.NewReply(401, challenge, "malformed credentials")
	cc.tooLarge = authn.NewReply(401, challenge, "credentials too large")
	cc.invalid = authn.NewReply(401, challenge, "invalid credentials")
	c.compiled = cc
	return nil
}

// Needs: verifying a bcrypt/argon2id hash takes milliseconds of CPU; on a
// cache miss that must not stall Envoy's worker thread (every other stream of
// the worker would wait), so a config with hashed passwords runs OnReceive off
// the worker. Plain passwords are checked in well under a microsecond, inline.
func (c *Config) Needs() api.Needs {
	n := api.Needs{Phase: api.AfterRoute}
	if c.compiled != nil && c.compiled.users != nil && c.compiled.users.hashed {
		n.MayBlock = api.BlockReceive
	}
	return n
}

// merge applies a per-route config over its parent: the route's settings win;
// a route without consumers keeps the parent's users.
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
