package basicauth

import (
	"bytes"
	"encoding/base64"
	"strings"
	"unicode/utf8"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
)

type filter Config

func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	c := f.compiled
	if c.anonymous != nil && consumer.Authenticated(ctx) {
		consumer.Forward(ctx, h, c.header)
		c.stats.Skipped()
		return api.Continue
	}
	var vs []string
	if _, ok := h.Get("authorization"); ok { // Get first: an absent header costs nothing
		vs = h.Values("authorization")
	}
	token, res := basicToken(vs, c.maxHeader)
	switch res {
	case absent:
		if c.anonymous != nil {
			c.stats.Anonymous()
			consumer.Identify(ctx, h, c.anonymous, c.header)
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
	who, alive := c.users.verify(ctx, nfc(dec[:i]), nfc(dec[i+1:]))
	clear(dec) // do not leave the password in memory longer than needed
	if !alive {
		// The request ended while waiting for a hash slot. Never fail open: the
		// refusal goes nowhere, but Continue would be an authentication bypass
		// if the stream were still there.
		return c.deny(ctx, "canceled", c.invalid)
	}
	if who == nil {
		return c.deny(ctx, "invalid", c.invalid)
	}
	if c.hide {
		_ = h.Del("authorization")
	}
	c.stats.Allowed()
	consumer.Identify(ctx, h, who, c.header)
	return api.Continue
}

func (c *compiled) deny(ctx api.Context, reason string, r *authn.Reply) api.Status {
	c.stats.Denied(reason)
	return r.Send(ctx)
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
