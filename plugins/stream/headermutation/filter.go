package headermutation

import (
	"github.com/moeproxy/moe/shared/api"
)

// The filters are the config itself: stateless, no allocation per request.
// Each direction has its own type so that a config with only request
// mutations leaves the response path alone (and vice versa).

type reqFilter Config
type respFilter Config
type bothFilter Config

func (f *reqFilter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	c := (*Config)(f)
	if n := c.apply(ctx, h, c.req); n > 0 {
		c.reqApplied.Inc(n)
	}
	return api.Continue
}

func (f *respFilter) Append(ctx api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	c := (*Config)(f)
	if n := c.apply(ctx, h, c.resp); n > 0 {
		c.respApplied.Inc(n)
	}
	return api.Continue
}

func (f *bothFilter) OnReceive(ctx api.Context, h api.RequestHeaderMap, b api.Buffer, t api.HeaderMap) api.Status {
	return (*reqFilter)(f).OnReceive(ctx, h, b, t)
}

func (f *bothFilter) Append(ctx api.Context, h api.ResponseHeaderMap, b api.Buffer, t api.HeaderMap) api.Status {
	return (*respFilter)(f).Append(ctx, h, b, t)
}

// apply runs the mutations in order (each one sees the ones before it) and
// returns how many changed something. Write errors only say the stream
// ended: then nothing is sent anyway.
func (c *Config) apply(ctx api.Context, h api.HeaderMap, ops []op) uint64 {
	var n uint64
	for i := range ops {
		o := &ops[i]
		if o.when != nil {
			ok, err := o.when.Eval(ctx)
			if err != nil {
				c.condErrors.Inc(1)
				ctx.Log().Debugf("condition of the %s mutation of %s: %v (skipped)", o.kindName(), o.name, err)
				continue
			}
			if !ok {
				continue
			}
		}
		if o.kind == 'r' {
			if _, ok := h.Get(o.name); ok {
				_ = h.Del(o.name)
				n++
			}
			continue
		}
		if o.kind == 'a' {
			if _, ok := h.Get(o.name); ok {
				continue
			}
		}
		v := o.value.Render(ctx)
		if v == "" && !o.keepEmpty {
			continue
		}
		if s, changed := sanitize(v); changed {
			c.sanitized.Inc(1)
			v = s
		}
		if o.kind == 'p' {
			_ = h.Add(o.name, v)
		} else {
			_ = h.Set(o.name, v)
		}
		n++
	}
	return n
}

func (o *op) kindName() string {
	switch o.kind {
	case 's':
		return opSet
	case 'a':
		return opAdd
	case 'p':
		return opAppend
	}
	return opRemove
}

// sanitize replaces every byte a header value must not hold (control
// characters other than HTAB: NUL, CR and LF above all, which would end the
// header on the wire) with a space. A value from a variable such as $arg_x
// (percent-decoded) can hold them; a header line cannot. A clean value is
// returned as is, without allocating.
func sanitize(v string) (string, bool) {
	i := 0
	for ; i < len(v); i++ {
		if bad(v[i]) {
			break
		}
	}
	if i == len(v) {
		return v, false
	}
	b := []byte(v)
	for ; i < len(b); i++ {
		if bad(b[i]) {
			b[i] = ' '
		}
	}
	return string(b), true
}

func bad(c byte) bool { return (c < 0x20 && c != '\t') || c == 0x7f }

// newFilter picks the filter type for the configured directions.
func newFilter(c *Config) api.Filter {
	switch {
	case len(c.req) > 0 && len(c.resp) > 0:
		return (*bothFilter)(c)
	case len(c.resp) > 0:
		return (*respFilter)(c)
	}
	return (*reqFilter)(c)
}
