// Package hmacauth is the hmac-auth plugin: requests signed with a shared
// secret (HMAC-SHA256/512) over the request target, selected headers and a
// date, with a clock-skew window, replay protection by nonce and an optional
// body digest. The signing string format is documented in README.md.
package hmacauth

import (
	"crypto/hmac"
	"encoding/base64"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

func init() {
	registry.Register(registry.Plugin{
		Name:        "hmac-auth",
		Description: "authenticate consumers by HMAC-signed requests with replay protection",
		NewConfig:   newConfig,
		// The config is the shared stateless filter: no allocation per request.
		Factory: registry.Typed(func(c *Config) api.Filter { return (*filter)(c) }),
		// Config.Needs adds WholeBody when validate_request_body is on.
		Needs: api.Needs{Phase: api.AfterRoute},
		Merge: merge,
	})
}

type compiled struct {
	keys       map[string]*key
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
	replay     *nonceStore
	now        func() time.Time
	stats      *authn.Stats
	replies    replies
}

type replies struct {
	missing, malformed, tooLarge, badAlgorithm, badDate, expired *authn.Reply
	invalid, badDigest, replay, badNonce, full, missingOther     *authn.Reply
	missingSigned                                                map[string]*authn.Reply
}

type filter Config

func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, body api.Buffer, _ api.HeaderMap) api.Status {
	c := f.compiled
	if c.anonymous != nil && authn.AlreadyAuthenticated(ctx) {
		authn.StepAside(ctx, h, c.header)
		c.stats.Skipped()
		return api.Continue
	}
	r := &c.replies
	var vs []string
	if _, ok := h.Get("authorization"); ok { // the framework's Values copies: only when present
		vs = h.Values("authorization")
	}
	if len(vs) > 1 {
		return c.deny(ctx, "malformed", r.malformed)
	}
	var params string
	present := false
	if len(vs) == 1 {
		if len(vs[0]) > c.maxHeader {
			return c.deny(ctx, "too_large", r.tooLarge)
		}
		params, present = signatureValue(vs[0])
	}
	if !present {
		if c.anonymous != nil {
			c.stats.Anonymous()
			authn.SetConsumer(ctx, h, c.anonymous, c.header)
			return api.Continue
		}
		return c.deny(ctx, "missing", r.missing)
	}
	p, ok := parseSignature(params)
	if !ok || !authn.SafeHeaderValue(params) {
		return c.deny(ctx, "malformed", r.malformed)
	}
	newHash := c.allowed[p.algorithm]
	if newHash == nil {
		return c.deny(ctx, "bad_algorithm", r.badAlgorithm)
	}
	headers := p.headers
	if headers == "" {
		headers = "date" // draft-cavage's default
	}
	if _, ok := checkHeaderList(headers); !ok {
		return c.deny(ctx, "malformed", r.malformed)
	}
	for _, req := range c.required {
		if !listed(headers, req) {
			return c.deny(ctx, "missing_header", r.missingSigned[req])
		}
	}

	// The date first: cheap, and it bounds how long a nonce must be kept.
	date, ok := h.Get(c.dateHeader)
	if !ok {
		return c.deny(ctx, "missing_header", r.missingSigned[c.dateHeader])
	}
	// The signature covers every value joined by ", ", but only one is checked: two headers
	// would let a captured "a, b" value be replayed as a fresh "a".
	if len(h.Values(c.dateHeader)) > 1 {
		return c.deny(ctx, "malformed", r.badDate)
	}
	signed, ok := parseDate(date)
	if !ok {
		return c.deny(ctx, "malformed", r.badDate)
	}
	now := c.now()
	if d := now.Sub(signed); d > c.skew || d < -c.skew {
		return c.deny(ctx, "expired", r.expired)
	}

	k := c.keys[p.keyID]
	if k == nil {
		// Same answer as a bad signature: key ids are not secret, but there is no
		// reason to confirm which ones exist.
		return c.deny(ctx, "unknown_key", r.invalid)
	}
	st := k.pools[p.algorithm].Get().(*macState)
	defer k.pools[p.algorithm].Put(st)

	var missing bool
	st.buf, missing = appendSigningString(st.buf[:0], h, headers)
	if missing {
		return c.deny(ctx, "missing_header", r.missingOther)
	}
	st.mac.Reset()
	st.mac.Write(st.buf)
	st.sum = st.mac.Sum(st.sum[:0])
	if base64.StdEncoding.DecodedLen(len(p.signature)) > len(st.sig) {
		return c.deny(ctx, "bad_signature", r.invalid)
	}
	n, err := base64.StdEncoding.Decode(st.sig[:], []byte(p.signature))
	if err != nil || !hmac.Equal(st.sig[:n], st.sum) {
		return c.deny(ctx, "bad_signature", r.invalid)
	}

	// Body digest: only after the signature, so unauthenticated clients cannot
	// make us hash bodies; the digest header is then known to be signed.
	if c.body {
		if ok := checkBody(h, headers, body); !ok {
			return c.deny(ctx, "bad_digest", r.badDigest)
		}
	}

	// Replay last: only authenticated requests may take room in the cache.
	if c.replay != nil {
		nonce, _ := h.Get(c.nonce)
		if nonce == "" || len(nonce) > 256 || len(h.Values(c.nonce)) > 1 {
			return c.deny(ctx, "malformed", r.badNonce)
		}
		replay, full := c.replay.add(p.keyID, nonce, now, signed.Add(c.skew))
		switch {
		case replay:
			return c.deny(ctx, "replay", r.replay)
		case full:
			return c.deny(ctx, "replay_cache_full", r.full)
		}
	}

	if c.hide {
		_ = h.Del("authorization")
	}
	c.stats.Allowed()
	authn.SetConsumer(ctx, h, k.consumer, c.header)
	return api.Continue
}

func (c *compiled) deny(ctx api.Context, reason string, r *authn.Reply) api.Status {
	c.stats.Denied(reason)
	r.Send(ctx)
	return api.Stop
}

// checkHeaderList validates the space-separated headers="..." list: lower-case
// names or the request-target token, no duplicates (a duplicate would let two
// different requests share a signing string shape). It returns the count.
func checkHeaderList(list string) (int, bool) {
	n := 0
	for rest := list; rest != ""; {
		var name string
		name, rest, _ = strings.Cut(rest, " ")
		if name == "" {
			return 0, false // double space, or leading/trailing space
		}
		if name != targetToken && name != cavageTargetToken {
			if !authn.ValidHeaderName(name) || strings.ToLower(name) != name {
				return 0, false
			}
		}
		// Stop early: the duplicate check is quadratic, keep it bounded.
		if n == maxSignedHeaders || listedBefore(list, name, n) {
			return 0, false
		}
		n++
	}
	return n, true
}

// listedBefore reports whether name appears among the first n names of list.
func listedBefore(list, name string, n int) bool {
	for i := 0; i < n; i++ {
		var x string
		x, list, _ = strings.Cut(list, " ")
		if x == name {
			return true
		}
	}
	return false
}

// listed reports whether the space-separated list contains name. The two
// request-target spellings are the same thing.
func listed(list, name string) bool {
	for list != "" {
		var x string
		x, list, _ = strings.Cut(list, " ")
		if x == name || (isTarget(x) && isTarget(name)) {
			return true
		}
	}
	return false
}

func isTarget(s string) bool { return s == targetToken || s == cavageTargetToken }

// appendSigningString builds the signing string (see README.md):
//
//	<name>: <value>       one line per entry of headers="...", in that order,
//	                      joined by "\n", no trailing newline;
//	@request-target: <lower-case method> <:path as received, query included>
//	host: the :authority; other headers: all values, trimmed, joined by ", ".
//
// missing=true when a listed header is absent.
func appendSigningString(b []byte, h api.RequestHeaderMap, list string) (_ []byte, missing bool) {
	first := true
	for list != "" {
		var name string
		name, list, _ = strings.Cut(list, " ")
		if !first {
			b = append(b, '\n')
		}
		first = false
		b = append(b, name...)
		b = append(b, ':', ' ')
		switch {
		case isTarget(name):
			b = appendLower(b, h.Method())
			b = append(b, ' ')
			b = append(b, h.Path()...)
		case name == "host":
			host := h.Host()
			if host == "" {
				return b, true
			}
			b = append(b, host...)
		default:
			vs := h.Values(name)
			if len(vs) == 0 {
				return b, true
			}
			for i, v := range vs {
				if i > 0 {
					b = append(b, ',', ' ')
				}
				b = append(b, strings.TrimSpace(v)...)
			}
		}
	}
	return b, false
}

func appendLower(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}

// parseDate accepts an HTTP date (IMF-fixdate and the two obsolete forms, as
// net/http does) or unix seconds.
func parseDate(v string) (time.Time, bool) {
	if v != "" && v[0] >= '0' && v[0] <= '9' && len(v) <= 12 {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return time.Unix(n, 0), true
		}
	}
	t, err := http.ParseTime(v)
	return t, err == nil
}
