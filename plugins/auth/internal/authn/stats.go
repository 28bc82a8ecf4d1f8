package authn

import "github.com/moeproxy/moe/shared/api"

// Stats are the counters every credential plugin exports (names get the
// framework prefix moe_<plugin>_):
//
//	allowed              credential verified, consumer set
//	anonymous            no credential, let in as the anonymous consumer
//	skipped              an earlier plugin already authenticated the request
//	denied_<reason>      refused, one counter per reason the plugin declares
//
// Reasons are fixed at config time so the request path only increments.
type Stats struct {
	allowed, anonymous, skipped api.Counter
	denied                      map[string]api.Counter
	other                       api.Counter
}

// NewStats defines the counters; reasons are the plugin's denial reasons
// (short snake_case words such as "missing", "invalid", "malformed").
func NewStats(m api.Metrics, reasons ...string) *Stats {
	s := &Stats{
		allowed:   m.Counter("allowed"),
		anonymous: m.Counter("anonymous"),
		skipped:   m.Counter("skipped"),
		denied:    make(map[string]api.Counter, len(reasons)),
		other:     m.Counter("denied_other"),
	}
	for _, r := range reasons {
		s.denied[r] = m.Counter("denied_" + r)
	}
	return s
}

func (s *Stats) Allowed()   { s.allowed.Inc(1) }
func (s *Stats) Anonymous() { s.anonymous.Inc(1) }
func (s *Stats) Skipped()   { s.skipped.Inc(1) }

// Denied counts a refusal; an undeclared reason counts as denied_other.
func (s *Stats) Denied(reason string) {
	if c, ok := s.denied[reason]; ok {
		c.Inc(1)
		return
	}
	s.other.Inc(1)
}
