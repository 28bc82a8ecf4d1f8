package trace

import (
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// $trace_id and $span_id: the request's trace id and the gateway span's id
// (the parent id the upstream sees), in hex, for access logs and headers of
// any plugin that runs after trace. Slices of the traceparent sent upstream:
// no allocation.
func init() {
	variables.Register("trace_id", func(ctx api.Context) (string, bool) {
		if f := current(ctx); f != nil {
			return f.traceparent[3:35], true
		}
		return "", false
	})
	variables.Register("span_id", func(ctx api.Context) (string, bool) {
		if f := current(ctx); f != nil {
			return f.traceparent[36:52], true
		}
		return "", false
	})
}

func current(ctx api.Context) *filter {
	v, ok := ctx.GetState(stateKey)
	if !ok {
		return nil
	}
	f, _ := v.(*filter)
	if f == nil || !f.began {
		return nil
	}
	return f
}
