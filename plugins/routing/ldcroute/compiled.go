package ldcroute

import (
	"strings"
	"sync/atomic"

	"github.com/moeproxy/moe/plugins/routing/internal/steer"
	"github.com/moeproxy/moe/shared/api"
)

// unit is a Unit compiled for the request path.
type unit struct {
	*Unit
	index     int
	fallback  []int // unit indexes, in order
	nameState any   // Name boxed once: putting a string into an interface per request would allocate
	routed    api.Counter
	downGauge api.Gauge
}

// snapshot is the units' state at one moment: which are down and, for each
// unit, where its requests go now (-1: the unit and all its fallbacks are
// down). Requests read it with one atomic load; the admin API and Init
// replace it whole.
type snapshot struct {
	down  []bool
	route []int
}

type compiled struct {
	units       []unit
	slotOwner   []uint16 // slot -> unit index
	defaultUnit int
	state       atomic.Pointer[snapshot]
	admin       *adminServer
	lastWarn    atomic.Int64

	clusterHeader, unitHeader, responseHeader string
	invalidReplyHeaders, allDownReplyHeaders  api.Headers

	noUID, invalidUID, rejectedInvalid, fallback, allDownRejected, allDownHome, clusterNF api.Counter
	adminChanges                                                                          api.Counter
}

// StateUnit is the state key of the unit a request was sent to (a string, so
// it reaches later golang filters and Envoy's access log as filter state
// moe.state.ldc_unit); $ldc_unit reads it.
const StateUnit = "ldc_unit"

// Init compiles the slot table and the units, publishes the first snapshot
// and, with admin set, attaches to (or starts) the admin server. When the
// config is only checked (env.CheckOnly) nothing is bound: Validate checked
// that admin.address is a loopback ip:port; whether it is free is only known
// by binding it.
func (c *Config) Init(env api.ConfigEnv) error {
	m := env.Metrics()
	c.clusterHeader = strings.ToLower(c.ClusterHeader)
	c.unitHeader = strings.ToLower(c.UnitHeader)
	c.responseHeader = strings.ToLower(c.ResponseHeader)
	index := make(map[string]int, len(c.Units))
	for i, u := range c.Units {
		index[u.Name] = i
	}
	c.units = make([]unit, len(c.Units))
	c.slotOwner = make([]uint16, c.Slots)
	for i := range c.Units {
		u := &c.units[i]
		u.Unit, u.index, u.nameState = &c.Units[i], i, c.Units[i].Name
		for _, fb := range u.Fallback {
			u.fallback = append(u.fallback, index[fb])
		}
		for _, s := range u.Slots {
			lo, hi, _ := parseSlots(s, c.Slots) // checked by Validate
			for k := lo; k <= hi; k++ {
				c.slotOwner[k] = uint16(i)
			}
		}
		u.routed = m.Counter("routed_" + steer.MetricSuffix(u.Name))
		u.downGauge = m.Gauge("unit_down_" + steer.MetricSuffix(u.Name))
	}
	c.defaultUnit = index[c.DefaultUnit]
	text := []string{"text/plain; charset=utf-8"}
	c.invalidReplyHeaders = api.Headers{"content-type": text}
	c.allDownReplyHeaders = api.Headers{"content-type": text}
	c.noUID = m.Counter("no_uid")
	c.invalidUID = m.Counter("invalid_uid")
	c.rejectedInvalid = m.Counter("rejected_invalid_uid")
	c.fallback = m.Counter("fallback")
	c.allDownRejected = m.Counter("rejected_all_down")
	c.allDownHome = m.Counter("all_down_home")
	c.clusterNF = m.Counter("cluster_not_found")
	c.adminChanges = m.Counter("admin_changes")
	c.publish(nil)
	if c.Admin != nil && !env.CheckOnly() {
		s, err := attach(c, env.Log())
		if err != nil {
			return api.FieldErrorf("admin.address", "%v", err)
		}
		c.admin = s
	}
	return nil
}

// Destroy detaches from the admin server; the last config on an address
// stops it.
func (c *Config) Destroy() {
	if c.admin != nil {
		c.admin.detach(c)
		c.admin = nil
	}
}

// publish computes and stores the snapshot from the config's down flags and
// the admin marks (unit name -> down; nil for none).
func (c *Config) publish(marks map[string]bool) {
	s := &snapshot{down: make([]bool, len(c.units)), route: make([]int, len(c.units))}
	for i := range c.units {
		d := c.units[i].Down
		if m, ok := marks[c.units[i].Name]; ok {
			d = m
		}
		s.down[i] = d
	}
	for i := range c.units {
		s.route[i] = -1
		if !s.down[i] {
			s.route[i] = i
			continue
		}
		for _, fb := range c.units[i].fallback {
			if !s.down[fb] {
				s.route[i] = fb
				break
			}
		}
	}
	c.state.Store(s)
	for i := range c.units {
		if s.down[i] {
			c.units[i].downGauge.Set(1)
		} else {
			c.units[i].downGauge.Set(0)
		}
	}
}
