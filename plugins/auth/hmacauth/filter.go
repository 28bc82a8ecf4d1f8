package hmacauth

import (
	"crypto/hmac"
	"encoding/base64"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
)

type filter Config

func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, body api.Buffer, _ api.HeaderMap) api.Status {
	c := f.compiled
	if c.anonymous != nil && consumer.Authenticated(ctx) {
		consumer.Forward(ctx, h, c.header)
		c.stats.Skipped()
		return api.Continue
	}
	r := &c.replies
	var vs []string
	if _, ok := h.Get("authorization"); ok { // Get first: an absent header costs nothing
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
			consumer.Identify(ctx, h, c.anonymous, c.header)
			return api.Continue
		}
		return c.deny(ctx, "missing", r.missing)
	}
	p, ok := parseSignature(params)
	if !ok || !consumer.SafeHeaderValue(params) {
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

	// Replay last: only authenticated requests may take room in the store
	// (or cost a Redis call).
	if c.replay != nil {
		nonce, _ := h.Get(c.nonce)
		if nonce == "" || len(nonce) > maxNonceBytes || len(h.Values(c.nonce)) > 1 {
			return c.deny(ctx, "malformed", r.badNonce)
		}
		switch c.replay.check(ctx, p.keyID, nonce, now, signed.Add(c.skew)) {
		case nonceReplay:
			return c.deny(ctx, "replay", r.replay)
		case nonceFull:
			return c.deny(ctx, "replay_cache_full", r.full)
		case nonceUnavailable:
			return c.deny(ctx, "nonce_store_unavailable", r.unavailable)
		}
	}

	if c.hide {
		_ = h.Del("authorization")
	}
	c.stats.Allowed()
	consumer.Identify(ctx, h, k.consumer, c.header)
	return api.Continue
}

func (c *compiled) deny(ctx api.Context, reason string, r *authn.Reply) api.Status {
	c.stats.Denied(reason)
	return r.Send(ctx)
}
