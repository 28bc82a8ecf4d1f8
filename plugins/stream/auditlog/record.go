package auditlog

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/moeproxy/moe/plugins/stream/internal/logsink"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

const masked = "***"

// appendRecord appends the request's record, one JSON line:
//
//	{"time":"…","request_id":"…",
//	 "who":{"consumer":"alice","consumer_group":"…","source_ip":"…"},
//	 "what":{"method":"GET","host":"…","path":"/x?token=***","route":"…","cluster":"…"},
//	 "decision":{"allowed":false,"by":"key-auth","reason":"invalid API key","status":401},
//	 "decisions":[{"plugin":"key-auth","allowed":false,"reason":"invalid API key","status":401}],
//	 "status":401,"details":"moe_reply{key-auth}","latency_ms":0.412,
//	 "headers":{…},"fields":{…}}
//
// It reports whether the request was denied by a plugin.
func (c *Config) appendRecord(b []byte, ctx api.Context, req api.RequestHeaderMap, resp api.ResponseHeaderMap, info api.RequestInfo) ([]byte, bool) {
	b = append(b, `{"time":`...)
	b = append(b, '"')
	b = info.StartTime().UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	b = append(b, `","request_id":`...)
	b = logsink.AppendJSONString(b, ctx.RequestID())

	// who
	var name, group string
	if cs := ctx.Consumer(); cs != nil {
		name, group = cs.Name, cs.Group
	}
	ip, _ := variables.SplitAddress(info.DownstreamRemoteAddress())
	b = append(b, `,"who":{"consumer":`...)
	b = logsink.AppendJSONString(b, name)
	b = append(b, `,"consumer_group":`...)
	b = logsink.AppendJSONString(b, group)
	b = append(b, `,"source_ip":`...)
	b = logsink.AppendJSONString(b, ip)

	// what
	var method, host, path string
	if req != nil {
		method, host, path = req.Method(), req.Host(), c.maskPath(req.Path())
	}
	rt := ctx.Receiver().Route()
	cluster := rt.ClusterName()
	if cluster == "" {
		cluster = info.UpstreamCluster()
	}
	b = append(b, `},"what":{"method":`...)
	b = logsink.AppendJSONString(b, method)
	b = append(b, `,"host":`...)
	b = logsink.AppendJSONString(b, host)
	b = append(b, `,"path":`...)
	b = logsink.AppendJSONString(b, path)
	b = append(b, `,"route":`...)
	b = logsink.AppendJSONString(b, rt.RouteName())
	b = append(b, `,"cluster":`...)
	b = logsink.AppendJSONString(b, cluster)
	b = append(b, '}')

	// the decision: the first refusal, else the last plugin that allowed
	ds := ctx.Decisions()
	var deciding *api.Decision
	for i := range ds {
		if !ds[i].Allowed {
			deciding = &ds[i]
			break
		}
		deciding = &ds[i]
	}
	denied := deciding != nil && !deciding.Allowed
	b = append(b, `,"decision":{"allowed":`...)
	b = strconv.AppendBool(b, !denied)
	if deciding != nil {
		b = append(b, `,"by":`...)
		b = logsink.AppendJSONString(b, deciding.Plugin)
		b = append(b, `,"reason":`...)
		b = logsink.AppendJSONString(b, deciding.Reason)
		if deciding.Status != 0 {
			b = append(b, `,"status":`...)
			b = strconv.AppendInt(b, int64(deciding.Status), 10)
		}
	}
	b = append(b, `},"decisions":[`...)
	for i := range ds {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"plugin":`...)
		b = logsink.AppendJSONString(b, ds[i].Plugin)
		b = append(b, `,"allowed":`...)
		b = strconv.AppendBool(b, ds[i].Allowed)
		b = append(b, `,"reason":`...)
		b = logsink.AppendJSONString(b, ds[i].Reason)
		if ds[i].Status != 0 {
			b = append(b, `,"status":`...)
			b = strconv.AppendInt(b, int64(ds[i].Status), 10)
		}
		b = append(b, '}')
	}
	b = append(b, ']')

	// outcome
	status := 0
	if resp != nil {
		status = resp.Status()
	}
	if status == 0 {
		status = info.ResponseCode()
	}
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	if d, err := info.GetProperty("response.code_details"); err == nil && d != "" {
		b = append(b, `,"details":`...)
		b = logsink.AppendJSONString(b, d)
	}
	b = append(b, `,"latency_ms":`...)
	b = strconv.AppendFloat(b, float64(info.Duration().Microseconds())/1000, 'f', 3, 64)

	if len(c.headers) > 0 {
		b = append(b, `,"headers":{`...)
		n := 0
		for i := range c.headers {
			h := &c.headers[i]
			var v string
			var ok bool
			if req != nil {
				v, ok = req.Get(h.name)
			}
			if !ok {
				continue
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = append(b, h.key...)
			if h.masked {
				v = masked
			}
			b = logsink.AppendJSONString(b, v)
		}
		b = append(b, '}')
	}
	if len(c.fields) > 0 {
		b = append(b, `,"fields":{`...)
		for i := range c.fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, c.fields[i].key...)
			b = logsink.AppendJSONString(b, c.fields[i].tpl.Render(ctx))
		}
		b = append(b, '}')
	}
	return append(b, '}', '\n'), denied
}

// maskPath replaces the values of masked query parameters with "***". A
// path without them is returned as is (no copy).
func (c *Config) maskPath(p string) string {
	i := strings.IndexByte(p, '?')
	if i < 0 || c.maskQuery == nil {
		return p
	}
	q := p[i+1:]
	found := false
	for rest := q; rest != ""; {
		var kv string
		kv, rest, _ = strings.Cut(rest, "&")
		k, _, _ := strings.Cut(kv, "=")
		if c.isMaskedParam(k) {
			found = true
			break
		}
	}
	if !found {
		return p
	}
	var sb strings.Builder
	sb.Grow(len(p))
	sb.WriteString(p[:i+1])
	first := true
	for rest := q; rest != ""; {
		var kv string
		kv, rest, _ = strings.Cut(rest, "&")
		if !first {
			sb.WriteByte('&')
		}
		first = false
		k, _, hasV := strings.Cut(kv, "=")
		if c.isMaskedParam(k) && hasV {
			sb.WriteString(k)
			sb.WriteString("=" + masked)
			continue
		}
		sb.WriteString(kv)
	}
	return sb.String()
}

func (c *Config) isMaskedParam(k string) bool {
	if c.maskQuery[k] {
		return true
	}
	if strings.ContainsAny(k, "%+") {
		if u, err := url.QueryUnescape(k); err == nil {
			return c.maskQuery[u]
		}
	}
	return false
}
