package canary

import (
	"math"
	"math/rand/v2"

	"github.com/moeproxy/moe/plugins/routing/internal/steer"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// keyHash is the hash a key is placed by (salted).
func (c *compiled) keyHash(key string) uint64 { return steer.Mix(steer.Hash(key) ^ c.saltHash) }

// pick is weighted rendezvous hashing: every target with a weight draws
// Exp1(mix(hash, target))/weight and the smallest wins. A target wins with
// probability weight/sum; changing a weight moves only the keys that must
// move (to the target that grew, from the one that shrank) and never between
// two targets whose weights stayed; a target added or removed takes or gives
// only its own share. Cost: one mix and one log per target.
func (c *compiled) pick(h uint64) *target {
	var best *target
	bs := math.Inf(1)
	for _, t := range c.weighted {
		if s := steer.Exp1(steer.Mix(h^t.seed)) * t.invWeight; s < bs {
			bs, best = s, t
		}
	}
	return best
}

// host picks one of a target's hosts for a hash (rendezvous, unweighted: a
// host added or removed moves only its own share of the keys). The hash is
// mixed once more so the host choice is independent of the target choice.
func (t *target) host(h uint64) string {
	h = steer.Mix(h + 0x9e3779b97f4a7c15)
	best, bs := 0, uint64(0)
	for i, s := range t.hostSeeds {
		if v := steer.Mix(h ^ s); v >= bs {
			best, bs = i, v
		}
	}
	return t.Hosts[best]
}

// decide chooses the target: a tester's override, then the sticky cookie,
// then the first key with a value, then no_key_target or a weighted random
// choice. It also returns the hash the host inside the target is chosen by.
func (c *Config) decide(ctx api.Context, h api.RequestHeaderMap) (*target, reason, uint64) {
	key, hasKey := c.key(ctx)
	var hash uint64
	if hasKey {
		hash = c.keyHash(key)
	} else {
		hash = rand.Uint64()
	}
	if c.Override != nil {
		if t := c.override(ctx, h); t != nil {
			return t, byOverride, hash
		}
	}
	if c.stickyCookie != "" {
		if v, ok := variables.Cookie(h.Values("cookie"), c.stickyCookie); ok {
			// A cookie naming a target that lost its weight (drained) or no
			// longer exists is decided again, and replaced.
			if t := c.byName[v]; t != nil && t.Weight > 0 {
				return t, byCookie, hash
			}
		}
	}
	if hasKey {
		return c.pick(hash), byKey, hash
	}
	if c.noKey != nil {
		return c.noKey, byNoKeyTarget, hash
	}
	return c.pick(hash), byRandom, hash
}

// key is the first configured key variable with a usable value.
func (c *Config) key(ctx api.Context) (string, bool) {
	for _, k := range c.Keys {
		v, _ := k.Get(ctx)
		if v == "" {
			continue
		}
		if len(v) > c.MaxKeyLength {
			c.invalidKey.Inc(1)
			continue
		}
		return v, true
	}
	return "", false
}

// override returns the target a tester asked for, or nil. An unknown name is
// counted and ignored (the request is decided as usual); so is an override on
// a request that override.match refuses.
func (c *Config) override(ctx api.Context, h api.RequestHeaderMap) *target {
	name, asked := "", false
	if c.overrideHeader != "" {
		name, asked = h.Get(c.overrideHeader)
	}
	if !asked && c.overrideCookie != "" {
		name, asked = variables.Cookie(h.Values("cookie"), c.overrideCookie)
	}
	if !asked {
		return nil
	}
	if !c.Override.Match.Matches(ctx, h) {
		c.overrideRefused.Inc(1)
		return nil
	}
	t := c.byName[name]
	if t == nil {
		c.overrideUnknown.Inc(1)
	}
	return t
}
