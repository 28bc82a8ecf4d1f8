// Package basicauth is the basic-auth plugin (RFC 7617): user name and
// password from the Authorization header, checked against consumers defined in
// config with clear-text, bcrypt or argon2id passwords.
package basicauth

import (
	"bytes"
	"encoding/base64"
	"strings"
	"unicode/utf8"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

func init() {
	registry.Register(registry.Plugin{
		Name:        "basic-auth",
		Description: "authenticate consumers with HTTP Basic credentials (RFC 7617)",
		NewConfig:   newConfig,
		// The config is the shared stateless filter: no allocation per request.
		Factory: registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		// Config.Needs adds MayBlock when passwords are hashed.
		Needs: api.Needs{Phase: api.AfterRoute},
		Merge: merge,
	})
}

type compiled struct {
	users     *users
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

type filter Config

func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	c := f.compiled
	if c.anonymous != nil && authn.AlreadyAuthenticated(ctx) {
		authn.StepAside(ctx, h, c.header)
		c.stats.Skipped()
		return api.Continue
	}
	var vs []string
	if _, ok := h.Get("authorization"); ok { // the framework's Values copies: only when present
		vs = h.Values("authorization")
	}
	token, res := basicToken(vs, c.maxHeader)
	switch res {
	case absent:
		if c.anonymous != nil {
			c.stats.Anonymous()
			authn.SetConsumer(ctx, h, c.anonymous, c.header)
			return api.Continue
		}
		return c.deny(ctx, "missing", c.missing)
	case tooLarge:
		return c.deny(ctx, "too_large", c.tooLarge)
	case malformed:
		return c.deny(ctx, "malformed", c.malformed)
	}

	// Decode into a stack buffer: credentials are short, the header is capped.
	var buf [768]byte
	var dec []byte
	if n := base64.StdEncoding.DecodedLen(len(token)); n <= len(buf) {
		dec = buf[:n]
	} else {
		dec = make([]byte, n)
	}
	n, err := base64.StdEncoding.Decode(dec, []byte(token))
	if err != nil {
		return c.deny(ctx, "malformed", c.malformed)
	}
	dec = dec[:n]
	i := bytes.IndexByte(dec, ':')
	if i < 0 || !validCredential(dec) {
		return c.deny(ctx, "malformed", c.malformed)
	}
	consumer, alive := c.users.verify(ctx, nfc(dec[:i]), nfc(dec[i+1:]))
	clear(dec) // do not leave the password in memory longer than needed
	if !alive {
		// The request ended while waiting for a hash slot. Never fail open: the
		// refusal goes nowhere, but Continue would be an authentication bypass
		// if the stream were still there.
		return c.deny(ctx, "canceled", c.invalid)
	}
	if consumer == nil {
		return c.deny(ctx, "invalid", c.invalid)
	}
	if c.hide {
		_ = h.Del("authorization")
	}
	c.stats.Allowed()
	authn.SetConsumer(ctx, h, consumer, c.header)
	return api.Continue
}

func (c *compiled) deny(ctx api.Context, reason string, r *authn.Reply) api.Status {
	c.stats.Denied(reason)
	r.Send(ctx)
	return api.Stop
}

const (
	found = iota
	absent
	malformed
	tooLarge
)

// basicToken extracts the token68 of a "Basic" Authorization header. Another
// scheme (Bearer, Signature, ...) counts as absent, so basic-auth can sit next
// to other auth plugins with anonymous_consumer.
func basicToken(vs []string, max int) (string, int) {
	if len(vs) == 0 {
		return "", absent
	}
	if len(vs) > 1 {
		return "", malformed // two Authorization headers: refuse to pick one
	}
	v := vs[0]
	if len(v) > max {
		return "", tooLarge
	}
	scheme, rest, _ := strings.Cut(v, " ")
	if !strings.EqualFold(scheme, "basic") {
		return "", absent
	}
	rest = strings.Trim(rest, " \t")
	if rest == "" {
		return "", malformed
	}
	return rest, found
}

// validCredential: RFC 7617 allows no control characters; the challenge says
// UTF-8, so the decoded user-pass must be valid UTF-8.
func validCredential(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return utf8.Valid(b)
}
