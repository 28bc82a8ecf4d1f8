package sentinel

import (
	"github.com/alibaba/sentinel-golang/core/base"
)

// entryKind is how a request enters sentinel: its traffic type and the slot
// chain of its rules (slotchain.go).
type entryKind struct {
	traffic base.TrafficType
	chain   *base.SlotChain
}

// enter asks sentinel for an entry on res, as sentinel's api.Entry does with
// WithTrafficType(k.traffic), WithSlotChain(k.chain) and WithArgs(args...),
// through the same public calls one level down. api.Entry builds the
// resource's ResourceWrapper anew for every entry (an allocation), and takes
// its options from a sync.Pool through one closure per option; here the
// wrapper is kept with the resource and the options are two fields.
func (k *entryKind) enter(res *resource, args []any) (*base.SentinelEntry, *base.BlockError) {
	ctx := k.chain.GetPooledContext()
	ctx.Resource = res.wrapper(k.traffic)
	ctx.Input.BatchCount, ctx.Input.Flag = 1, 0
	if len(args) != 0 {
		ctx.Input.Args = args
	}
	e := base.NewSentinelEntry(ctx, ctx.Resource, k.chain)
	ctx.SetEntry(e)
	r := k.chain.Entry(ctx)
	if r == nil || r.Status() != base.ResultStatusBlocked {
		return e, nil
	}
	// The deep copy outlives the context, which Exit hands back to the pool.
	blk := base.NewBlockErrorFromDeepCopy(r.BlockError())
	e.Exit()
	return nil, blk
}

// wrapper is the resource's sentinel ResourceWrapper for traffic t (a
// resource's traffic type changes only when a config adds or removes system
// rules). Wrappers are immutable, so requests share them.
func (r *resource) wrapper(t base.TrafficType) *base.ResourceWrapper {
	if w := r.wrap.Load(); w != nil && w.FlowType() == t {
		return w
	}
	w := base.NewResourceWrapper(r.name, base.ResTypeCommon, t)
	r.wrap.Store(w)
	return w
}
