package jwtauth

import (
	"fmt"
	"strings"
	"time"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
)

// reason is why a request was refused. Each has a precomputed reply and a
// counter, so the request path does no formatting.
type reason uint8

const (
	rMissing reason = iota
	rTooLarge
	rMalformed
	rAlg
	rUnknownKid
	rSignature
	rExpired
	rMissingExp
	rNotYetValid
	rIssuedInFuture
	rIssuer
	rAudience
	rUnknownConsumer
	rJWKSUnavailable
	numReasons
)

// reasonText is the short reason in the body, the error_description and the
// metric name. It never contains token material.
var reasonText = [numReasons]struct{ text, metric string }{
	rMissing:         {"missing token", "missing_token"},
	rTooLarge:        {"token too large", "token_too_large"},
	rMalformed:       {"malformed token", "malformed_token"},
	rAlg:             {"algorithm not allowed", "algorithm_not_allowed"},
	rUnknownKid:      {"unknown key id", "unknown_kid"},
	rSignature:       {"invalid signature", "invalid_signature"},
	rExpired:         {"token expired", "expired"},
	rMissingExp:      {"token has no expiry", "missing_exp"},
	rNotYetValid:     {"token not yet valid", "not_yet_valid"},
	rIssuedInFuture:  {"token issued in the future", "issued_in_future"},
	rIssuer:          {"issuer not allowed", "issuer_not_allowed"},
	rAudience:        {"audience not allowed", "audience_not_allowed"},
	rUnknownConsumer: {"unknown consumer", "unknown_consumer"},
	rJWKSUnavailable: {"jwks unavailable", "jwks_unavailable"},
}

type tokenSource struct {
	header string // lower case
	prefix string
	query  string
	cookie string
}

type claimHeader struct {
	path   []string // dotted path split
	full   string
	header string // lower case
}

// runtime is everything Init precomputes from a Config, once per config
// version.
type runtime struct {
	realm      string
	allowed    algSet
	static     *keySet
	jwks       *jwksSource
	ownsJWKS   bool
	issuers    []string
	audiences  []string
	leeway     time.Duration
	requireExp bool
	maxToken   int
	from       []tokenSource
	forward    []claimHeader

	consumerClaim  string
	consumers      map[string]*api.Consumer // claim value -> consumer (own and chain lists); nil: derived
	consumerHeader string
	hide           bool
	anonymous      *api.Consumer

	replies   [numReasons]*authn.Reply
	denied    [numReasons]api.Counter
	allowedC  api.Counter
	anonC     api.Counter
	skippedC  api.Counter
	refreshes api.Counter

	now func() time.Time // time.Now; tests pin it
}

// Init parses keys, indexes consumers (the plugin's own and the chain's),
// precomputes replies and metrics, and starts the JWKS refresher. When the
// config is only checked (env.CheckOnly) everything is checked as for real, a
// jwks.file is loaded, but the refresher does not start: a jwks.url is never
// fetched (Validate checked its syntax).
func (c *Config) Init(env api.ConfigEnv) error {
	rt, err := newRuntime(c, env)
	if err != nil {
		return err
	}
	c.rt = rt
	c.filter = &filter{rt: rt}
	if rt.jwks != nil && !env.CheckOnly() {
		rt.jwks.start()
	}
	return nil
}

// Destroy stops the JWKS refresher of this config version.
func (c *Config) Destroy() {
	if c.rt != nil && c.rt.jwks != nil && c.rt.ownsJWKS {
		c.rt.jwks.close()
	}
}

func newRuntime(c *Config, env api.ConfigEnv) (*runtime, error) {
	rt := &runtime{
		realm:          c.Realm,
		issuers:        c.Issuers,
		audiences:      c.Audiences,
		leeway:         c.Leeway.D(),
		requireExp:     c.RequireExp,
		maxToken:       c.MaxTokenSize,
		consumerClaim:  c.ConsumerClaim,
		consumerHeader: strings.ToLower(c.ConsumerHeader),
		hide:           c.HideCredentials,
		now:            time.Now,
	}
	allowed, err := parseAlgs(c.Algorithms, "algorithms")
	if err != nil {
		return nil, err
	}
	if allowed == 0 {
		allowed = algsAll
	}
	rt.allowed = allowed

	if !c.hasKeySource() && !env.IsRoute() {
		return nil, fieldErr("keys", "no key source: set keys or jwks.url or jwks.file")
	}
	if len(c.Keys) > 0 {
		rt.static = &keySet{}
		for i := range c.Keys {
			k, err := c.Keys[i].parse(allowed)
			if err != nil {
				return nil, prefixErr(fmt.Sprintf("keys[%d]", i), err)
			}
			rt.static.keys = append(rt.static.keys, k)
		}
	}

	m := env.Metrics()
	if c.JWKS.enabled() {
		// env.Log stays valid after Init: the refresher logs through it.
		rt.jwks = newJWKSSource(&c.JWKS, allowed, env.Log(), m)
		rt.ownsJWKS = true
		if c.JWKS.File != "" {
			if err := rt.jwks.loadFileNow(); err != nil {
				return nil, fieldErr("jwks.file", "%v", err)
			}
		}
	}

	from := c.From
	if len(from) == 0 {
		from = []TokenSource{{Header: "authorization", Prefix: "Bearer "}}
	}
	for _, s := range from {
		rt.from = append(rt.from, tokenSource{header: strings.ToLower(s.Header), prefix: s.Prefix, query: s.Query, cookie: s.Cookie})
	}
	for _, fc := range c.ForwardClaims {
		rt.forward = append(rt.forward, claimHeader{path: strings.Split(fc.Claim, "."), full: fc.Claim, header: strings.ToLower(fc.Header)})
	}
	if err := rt.indexConsumers(c, env); err != nil {
		return nil, err
	}
	rt.anonymous = c.Options.Anonymous()

	realm := "realm=" + authn.QuoteParam(c.Realm)
	for r := reason(0); r < numReasons; r++ {
		text := reasonText[r].text
		challenge := "Bearer " + realm
		if r != rMissing {
			// RFC 6750 3.1: a request without credentials gets no error code.
			challenge += `, error="invalid_token", error_description=` + authn.QuoteParam(text)
		}
		rt.replies[r] = authn.NewReply(401, challenge, text)
		rt.denied[r] = m.Counter("denied_" + reasonText[r].metric)
	}
	rt.allowedC = m.Counter("allowed")
	rt.anonC = m.Counter("anonymous")
	rt.skippedC = m.Counter("skipped")
	rt.refreshes = m.Counter("jwks_refresh_requested")
	return rt, nil
}

// indexConsumers maps claim values to consumers, from the plugin's own list
// and the chain's consumers with a jwt-auth credential (consumer.Collect
// checks the names, unique across both lists). A claim value may name one
// consumer only.
func (rt *runtime) indexConsumers(c *Config, env api.ConfigEnv) error {
	entries, err := consumer.Collect(env, "consumers", c.Consumers,
		func(x *Consumer) (*consumer.Spec, *Credential) { return &x.Spec, &x.Credential })
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	if c.ConsumerClaim == "" && !env.IsRoute() {
		// A route may leave it out and use its parent's claim (merge).
		return fieldErr("consumer_claim", "required when consumers are listed (%s)", entries[0].Field)
	}
	rt.consumers = make(map[string]*api.Consumer, len(entries))
	values := claimValues{}
	for _, e := range entries {
		v := e.Credential.claimValue(e.Consumer.Name)
		if err := values.add(e.Field, v); err != nil {
			return err
		}
		rt.consumers[v] = e.Consumer
	}
	return nil
}
