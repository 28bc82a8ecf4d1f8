package debug

import (
	"strconv"
	"strings"
	"time"

	"github.com/moeproxy/moe/shared/api"
)

// entry is one plugin's part of a trace.
type entry struct {
	plugin    string
	total     time.Duration
	hooks     [4]time.Duration // by hookIndex
	decisions []api.Decision
}

var hookParams = [4]string{"recv", "send", "recv_data", "send_data"}

func hookIndex(h string) int {
	switch h {
	case "OnReceive":
		return 0
	case "Append":
		return 1
	case "OnReceiveData":
		return 2
	}
	return 3 // AppendData
}

// formatTrace renders the plugins that ran (in the order they first ran,
// then those that only decided), in Server-Timing syntax:
//
//	moe;dur=0.052, key-auth;dur=0.012;recv=0.012;decision=allow;desc="consumer alice",
//	limit-req;dur=0.040;recv=0.031;send=0.009;decision=deny;status=429;desc="Too Many Requests"
//
// Durations are milliseconds with microsecond precision; "moe" is the sum of
// all plugins. The debug plugin leaves itself out.
func formatTrace(self string, calls []api.PluginCall, decisions []api.Decision) string {
	var es []*entry
	get := func(p string) *entry {
		for _, e := range es {
			if e.plugin == p {
				return e
			}
		}
		e := &entry{plugin: p}
		es = append(es, e)
		return e
	}
	var sum time.Duration
	for _, c := range calls {
		if c.Plugin == self {
			continue
		}
		e := get(c.Plugin)
		e.total += c.Duration
		e.hooks[hookIndex(c.Hook)] += c.Duration
		sum += c.Duration
	}
	for _, d := range decisions {
		if d.Plugin == self {
			continue
		}
		e := get(d.Plugin)
		e.decisions = append(e.decisions, d)
	}
	var b strings.Builder
	b.WriteString("moe;dur=")
	b.WriteString(ms(sum))
	for _, e := range es {
		b.WriteString(", ")
		b.WriteString(e.plugin)
		b.WriteString(";dur=")
		b.WriteString(ms(e.total))
		for i, d := range e.hooks {
			if d > 0 {
				b.WriteString(";" + hookParams[i] + "=")
				b.WriteString(ms(d))
			}
		}
		if len(e.decisions) == 0 {
			continue
		}
		allowed, status := true, 0
		reasons := make([]string, 0, len(e.decisions))
		for _, d := range e.decisions {
			if !d.Allowed && allowed {
				allowed, status = false, d.Status
			}
			if d.Reason != "" {
				reasons = append(reasons, d.Reason)
			}
		}
		if allowed {
			b.WriteString(";decision=allow")
		} else {
			b.WriteString(";decision=deny")
			if status != 0 {
				b.WriteString(";status=" + strconv.Itoa(status))
			}
		}
		if len(reasons) > 0 {
			b.WriteString(";desc=")
			b.WriteString(quote(strings.Join(reasons, "; ")))
		}
	}
	return b.String()
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
}

// quote makes an HTTP quoted-string of printable ASCII, at most 200 bytes of
// content.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	n := 0
	for i := 0; i < len(s) && n < 200; i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			b.WriteByte('?')
		default:
			b.WriteByte(c)
		}
		n++
	}
	b.WriteByte('"')
	return b.String()
}

// safe cuts s to n bytes and replaces what could forge log lines.
func safe(s string, n int) string {
	if len(s) > n {
		s = s[:n] + "..."
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

// withoutQuery drops the query: it may carry credentials (?api_key=...).
func withoutQuery(p string) string {
	if i := strings.IndexAny(p, "?#"); i >= 0 {
		return p[:i]
	}
	return p
}
