package filtermanager

import (
	"strings"
	"time"

	"github.com/moeproxy/moe/shared/api"
)

// observation holds what plugins report about a request: decisions (kept only
// when the chain has a plugin that reads them) and, when a plugin turned it on
// for the request, the timing of every plugin call. Allocated on first use.
type observation struct {
	decisions []api.Decision
	calls     []api.PluginCall
}

func (s *stream) observationLocked() *observation {
	if s.obs == nil {
		s.obs = &observation{}
	}
	return s.obs
}

// decideLocked records a decision if the chain keeps them.
func (s *stream) decideLocked(d api.Decision) {
	if !s.ch.Load().observes {
		return
	}
	o := s.observationLocked()
	o.decisions = append(o.decisions, d)
}

// replyReason is a short reason from a reply body: its first line, cut.
func replyReason(body string) string {
	if i := strings.IndexAny(body, "\r\n"); i >= 0 {
		body = body[:i]
	}
	if len(body) > 120 {
		body = body[:120]
	}
	return body
}

func (sl *slot) Decide(allowed bool, reason string) {
	s := sl.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.decideLocked(api.Decision{Plugin: sl.p.name, Allowed: allowed, Reason: reason})
}

func (sl *slot) Decisions() []api.Decision {
	s := sl.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.obs == nil {
		return nil
	}
	return append([]api.Decision(nil), s.obs.decisions...)
}

func (sl *slot) TraceCalls() {
	s := sl.s
	s.mu.Lock()
	s.observationLocked()
	s.mu.Unlock()
	s.tracing.Store(true)
}

func (sl *slot) Calls() []api.PluginCall {
	s := sl.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.obs == nil {
		return nil
	}
	return append([]api.PluginCall(nil), s.obs.calls...)
}

var hookNames = [...]string{"OnReceive", "Append", "OnReceiveData", "AppendData"}

// recordCall adds one timed plugin call (tracing requests only).
func (s *stream) recordCall(p *plugin, decode, data bool, start time.Time, st api.Status) {
	d := time.Since(start)
	h := 0
	if !decode {
		h = 1
	}
	if data {
		h += 2
	}
	s.mu.Lock()
	o := s.observationLocked()
	o.calls = append(o.calls, api.PluginCall{Plugin: p.name, Hook: hookNames[h], Start: start, Duration: d, Status: st})
	s.mu.Unlock()
}
