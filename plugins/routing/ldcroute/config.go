package ldcroute

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/moeproxy/moe/plugins/routing/internal/steer"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// Config of the ldc-route plugin. See README.md for the reference.
type Config struct {
	// UID names where the user id is read: the first variable with a
	// non-empty value counts ("$header_x-uid", "$cookie_uid", "$consumer").
	UID []variables.Var `json:"uid"`
	// SlotBy says how a user id becomes a slot: "mod" (a decimal user id
	// modulo slots: with 100 slots, its last two digits) or "hash" (xxHash64
	// of the id modulo slots, for ids that are not numbers).
	SlotBy string `json:"slot_by"`
	// Slots is the number of slots (100: slots 0..99).
	Slots int `json:"slots"`
	// MaxUIDLength: a longer user id is invalid.
	MaxUIDLength int `json:"max_uid_length"`
	// InvalidUID is what to do with an id that is too long or, with
	// slot_by "mod", not a decimal number: "default" (route to default_unit)
	// or "reject" (answer invalid_uid_status).
	InvalidUID string `json:"invalid_uid"`
	// InvalidUIDStatus answers an invalid id with invalid_uid "reject".
	InvalidUIDStatus int `json:"invalid_uid_status"`
	// Units are the units and the slots each one owns; together they must
	// own every slot exactly once.
	Units []Unit `json:"units"`
	// DefaultUnit serves requests without a user id (and invalid ones with
	// invalid_uid "default").
	DefaultUnit string `json:"default_unit"`
	// AllDown is what happens when a request's unit and its whole fallback
	// list are down: "reject" (answer all_down_status) or "home" (send it to
	// its own unit anyway).
	AllDown string `json:"all_down"`
	// AllDownStatus answers with all_down "reject".
	AllDownStatus int `json:"all_down_status"`
	// ClusterHeader is the request header set to the unit's cluster, read by
	// the route's cluster_header ("" = none).
	ClusterHeader string `json:"cluster_header"`
	// UnitHeader is a request header set to the unit's name, for routes that
	// match on it and for the upstream ("" = none).
	UnitHeader string `json:"unit_header"`
	// ResponseHeader is a response header set to the unit that served the
	// request ("" = none).
	ResponseHeader string `json:"response_header"`
	// Admin, when set, serves a small HTTP API on a loopback address to list
	// the units and mark them down or up.
	Admin *Admin `json:"admin"`

	compiled
}

// Unit is one unit (an LDC zone such as RZ01).
type Unit struct {
	// Name of the unit (metrics, headers, $ldc_unit, the admin API).
	Name string `json:"name"`
	// Cluster serving the unit: written into cluster_header.
	Cluster string `json:"cluster"`
	// Slots owned by the unit: "0-29" (both ends included) or "42".
	Slots []string `json:"slots"`
	// Fallback lists the units that take the unit's requests, in order, while
	// it is down.
	Fallback []string `json:"fallback"`
	// Down marks the unit down in config (the admin API can override it).
	Down bool `json:"down"`
}

// Admin is the plugin's own HTTP API (Envoy's admin cannot be extended by a
// golang filter).
type Admin struct {
	// Address to listen on: a loopback IP and port ("127.0.0.1:9980",
	// "[::1]:9980").
	Address string `json:"address"`
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every call.
	Token string `json:"token"`
}

const (
	slotByMod  = "mod"
	slotByHash = "hash"

	invalidDefault = "default"
	invalidReject  = "reject"

	allDownReject = "reject"
	allDownHome   = "home"

	maxSlots = 10_000
	maxUnits = 256
)

func newConfig() any {
	return &Config{
		SlotBy:           slotByMod,
		Slots:            100,
		MaxUIDLength:     64,
		InvalidUID:       invalidDefault,
		InvalidUIDStatus: 400,
		AllDown:          allDownReject,
		AllDownStatus:    503,
		ClusterHeader:    "x-moe-cluster",
		UnitHeader:       "x-ldc-unit",
		ResponseHeader:   "x-ldc-unit",
	}
}

// Validate checks the config, including that the units own every slot once
// and that fallbacks and the default unit exist; errors name the field.
func (c *Config) Validate() error {
	if len(c.UID) == 0 {
		return api.FieldErrorf("uid", "at least one variable is required, e.g. [\"$header_x-uid\"]")
	}
	for i, v := range c.UID {
		if v.IsZero() {
			return api.FieldErrorf(api.Field("uid", i), "must be a variable such as \"$header_x-uid\"")
		}
	}
	if err := api.CheckOneOf("slot_by", c.SlotBy, slotByMod, slotByHash); err != nil {
		return err
	}
	if err := api.CheckRange("slots", c.Slots, 1, maxSlots); err != nil {
		return err
	}
	if err := api.CheckRange("max_uid_length", c.MaxUIDLength, 1, 4096); err != nil {
		return err
	}
	if err := api.CheckOneOf("invalid_uid", c.InvalidUID, invalidDefault, invalidReject); err != nil {
		return err
	}
	if err := api.CheckStatus("invalid_uid_status", c.InvalidUIDStatus); err != nil {
		return err
	}
	if err := api.CheckOneOf("all_down", c.AllDown, allDownReject, allDownHome); err != nil {
		return err
	}
	if err := api.CheckStatus("all_down_status", c.AllDownStatus); err != nil {
		return err
	}
	for _, h := range []struct{ field, v string }{{"cluster_header", c.ClusterHeader}, {"unit_header", c.UnitHeader}, {"response_header", c.ResponseHeader}} {
		if h.v != "" {
			if err := api.CheckHeaderName(h.field, h.v); err != nil {
				return err
			}
		}
	}
	if c.ClusterHeader == "" && c.UnitHeader == "" {
		return api.FieldErrorf("cluster_header", "cluster_header or unit_header is needed to steer the request")
	}
	if err := c.checkUnits(); err != nil {
		return err
	}
	if a := c.Admin; a != nil {
		if err := checkAdminAddress(a.Address); err != nil {
			return err
		}
		if a.Token != "" && len(a.Token) < 16 {
			return api.FieldErrorf("admin.token", "must be at least 16 characters")
		}
	}
	return nil
}

func (c *Config) checkUnits() error {
	if len(c.Units) == 0 {
		return api.FieldErrorf("units", "at least one unit is required")
	}
	if len(c.Units) > maxUnits {
		return api.FieldErrorf("units", "at most %d units, got %d", maxUnits, len(c.Units))
	}
	index := map[string]int{}
	suffixes := map[string]string{}
	for i, u := range c.Units {
		f := api.Field("units", i)
		if err := steer.CheckName(f+".name", u.Name); err != nil {
			return err
		}
		if _, dup := index[u.Name]; dup {
			return api.FieldErrorf(f+".name", "duplicate unit %q", u.Name)
		}
		if other, dup := suffixes[steer.MetricSuffix(u.Name)]; dup {
			return api.FieldErrorf(f+".name", "%q and %q have the same metric name", other, u.Name)
		}
		index[u.Name] = i
		suffixes[steer.MetricSuffix(u.Name)] = u.Name
		if c.ClusterHeader != "" || u.Cluster != "" {
			if err := steer.CheckClusterName(f+".cluster", u.Cluster); err != nil {
				return err
			}
		}
	}
	owner := make([]int, c.Slots)
	for i := range owner {
		owner[i] = -1
	}
	for i, u := range c.Units {
		for j, s := range u.Slots {
			f := api.Field(api.Field("units", i)+".slots", j)
			lo, hi, err := parseSlots(s, c.Slots)
			if err != nil {
				return api.FieldErrorf(f, "%v", err)
			}
			for k := lo; k <= hi; k++ {
				if o := owner[k]; o >= 0 {
					return api.FieldErrorf(f, "slot %d is already owned by unit %q", k, c.Units[o].Name)
				}
				owner[k] = i
			}
		}
		seen := map[string]bool{}
		for j, fb := range u.Fallback {
			f := api.Field(api.Field("units", i)+".fallback", j)
			if _, ok := index[fb]; !ok {
				return api.FieldErrorf(f, "no unit named %q", fb)
			}
			if fb == u.Name {
				return api.FieldErrorf(f, "a unit cannot fall back to itself")
			}
			if seen[fb] {
				return api.FieldErrorf(f, "%q is listed twice", fb)
			}
			seen[fb] = true
		}
	}
	for k := 0; k < c.Slots; k++ {
		if owner[k] < 0 {
			end := k
			for end+1 < c.Slots && owner[end+1] < 0 {
				end++
			}
			return api.FieldErrorf("units", "slots %s belong to no unit: every slot 0-%d needs exactly one unit", slotRange(k, end), c.Slots-1)
		}
	}
	if c.DefaultUnit == "" {
		return api.FieldErrorf("default_unit", "is required (requests without a user id go there)")
	}
	if _, ok := index[c.DefaultUnit]; !ok {
		return api.FieldErrorf("default_unit", "no unit named %q", c.DefaultUnit)
	}
	return nil
}

// parseSlots reads "a-b" (both included) or "a".
func parseSlots(s string, slots int) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(strings.TrimSpace(s), "-")
	lo, err1 := strconv.Atoi(strings.TrimSpace(a))
	hi = lo
	var err2 error
	if isRange {
		hi, err2 = strconv.Atoi(strings.TrimSpace(b))
	}
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("want \"<from>-<to>\" (both included) or one slot number, got %q", s)
	}
	if lo < 0 || hi >= slots || lo > hi {
		return 0, 0, fmt.Errorf("%q is outside the slots 0-%d or reversed", s, slots-1)
	}
	return lo, hi, nil
}

func slotRange(lo, hi int) string {
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

// checkAdminAddress accepts loopback IP:port only: the API changes routing
// and has no other protection than the optional token.
func checkAdminAddress(a string) error {
	ap, err := netip.ParseAddrPort(a)
	if err != nil {
		return api.FieldErrorf("admin.address", "must be a loopback IP:port such as \"127.0.0.1:9980\", got %q", a)
	}
	if !ap.Addr().IsLoopback() {
		return api.FieldErrorf("admin.address", "must be a loopback address (127.0.0.0/8 or ::1): the API changes routing, got %q", a)
	}
	if ap.Port() == 0 {
		return api.FieldErrorf("admin.address", "needs a port, got %q", a)
	}
	return nil
}
