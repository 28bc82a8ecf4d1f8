package ldcroute

import (
	"github.com/moeproxy/moe/plugins/routing/internal/steer"
	"github.com/moeproxy/moe/shared/api"
)

// uid is the first configured variable with a value ("" = none).
func (c *Config) uid(ctx api.Context) string {
	for _, v := range c.UID {
		if s, _ := v.Get(ctx); s != "" {
			return s
		}
	}
	return ""
}

// slotOf maps a user id to its slot; ok is false for an invalid id (too long,
// or not a decimal number with slot_by "mod").
func (c *Config) slotOf(uid string) (int, bool) {
	if len(uid) > c.MaxUIDLength {
		return 0, false
	}
	if c.SlotBy == slotByHash {
		return int(steer.Hash(uid) % uint64(c.Slots)), true
	}
	// Decimal modulo digit by digit: ids longer than 64-bit integers (and
	// leading zeros) work, and with 100 slots the slot is the id's last two
	// digits, as LDC deployments shard users.
	// r is reduced only when it could overflow (r*10+9 stays below 2^63).
	var r uint64
	for i := 0; i < len(uid); i++ {
		d := uid[i] - '0'
		if d > 9 {
			return 0, false
		}
		r = r*10 + uint64(d)
		if r >= 1<<59 {
			r %= uint64(c.Slots)
		}
	}
	return int(r % uint64(c.Slots)), true
}

// outcome of one request's routing.
type outcome uint8

const (
	routeHome outcome = iota
	routeFallback
	routeAllDownHome
	rejectAllDown
	rejectInvalid
)

// resolve finds the unit for a request: its home unit (from the slot, or the
// default unit), then the first fallback that is up.
func (c *Config) resolve(ctx api.Context) (home, target int, o outcome) {
	home = c.defaultUnit
	if id := c.uid(ctx); id == "" {
		c.noUID.Inc(1)
	} else if slot, ok := c.slotOf(id); ok {
		home = int(c.slotOwner[slot])
	} else {
		c.invalidUID.Inc(1)
		if c.InvalidUID == invalidReject {
			return home, -1, rejectInvalid
		}
	}
	switch t := c.state.Load().route[home]; {
	case t == home:
		return home, t, routeHome
	case t >= 0:
		return home, t, routeFallback
	case c.AllDown == allDownHome:
		return home, home, routeAllDownHome
	default:
		return home, -1, rejectAllDown
	}
}
