package sentinel

import (
	"github.com/alibaba/sentinel-golang/core/base"
	"github.com/alibaba/sentinel-golang/core/circuitbreaker"
	"github.com/alibaba/sentinel-golang/core/flow"
	"github.com/alibaba/sentinel-golang/core/hotspot"
	"github.com/alibaba/sentinel-golang/core/isolation"
	"github.com/alibaba/sentinel-golang/core/log"
	"github.com/alibaba/sentinel-golang/core/stat"
	"github.com/alibaba/sentinel-golang/core/system"
)

// newSlotChain is sentinel's default slot chain (api.BuildDefaultSlotChain:
// the same slots in the same order) without the slots of rule kinds rs does
// not have, and with statSlot for sentinel's statistic slot. A slot without
// rules still looks its resource up in a global map under a lock on every
// entry, and the breaker slots copy an empty rule list twice (two
// allocations): for the standard chain's one flow rule this drops five of
// ten slots. The chain belongs to the namespace's rules (spaceRules), which
// are the only rules its resources have, and is rebuilt with them. inbound:
// the entries are inbound traffic, checked by sentinel's system rules.
func newSlotChain(rs *ruleSet, inbound bool) *base.SlotChain {
	sc := base.NewSlotChain() // Add* keeps each list sorted by the slots' Order
	sc.AddStatPrepareSlot(stat.DefaultResourceNodePrepareSlot)
	sc.AddStatSlot(statSlot{stat.DefaultSlot})
	sc.AddStatSlot(log.DefaultSlot)
	if inbound {
		sc.AddRuleCheckSlot(system.DefaultAdaptiveSlot)
	}
	for _, k := range []struct {
		rules int
		check base.RuleCheckSlot
		stat  base.StatSlot // nil: the kind keeps no statistics of its own
	}{
		{len(rs.flows), flow.DefaultSlot, flow.DefaultStandaloneStatSlot},
		{len(rs.isos), isolation.DefaultSlot, nil},
		{len(rs.hots), hotspot.DefaultSlot, hotspot.DefaultConcurrencyStatSlot},
		{len(rs.cbs), circuitbreaker.DefaultSlot, circuitbreaker.DefaultMetricStatSlot},
	} {
		if k.rules == 0 {
			continue
		}
		sc.AddRuleCheckSlot(k.check)
		if k.stat != nil {
			sc.AddStatSlot(k.stat)
		}
	}
	return sc
}

// statSlot records what sentinel's stat.Slot records (passes, blocks and
// concurrency on the resource and, for inbound traffic, on the inbound node;
// completions through the embedded slot) without also adding to sentinel's
// Prometheus counter sentinel_go_handled_total. moe never exports that
// counter (it starts no sentinel exporter; moe_sentinel_* are the plugin's
// metrics), yet each update hashes three label values into a vector: ~600
// instructions of every entry in the standard chain (make bench, B3).
type statSlot struct{ *stat.Slot }

var _ base.StatSlot = statSlot{}

func (s statSlot) OnEntryPassed(ctx *base.EntryContext) {
	n := int64(ctx.Input.BatchCount)
	if sn := ctx.StatNode; sn != nil {
		sn.IncreaseConcurrency()
		sn.AddCount(base.MetricEventPass, n)
	}
	if ctx.Resource.FlowType() == base.Inbound {
		in := stat.InboundNode()
		in.IncreaseConcurrency()
		in.AddCount(base.MetricEventPass, n)
	}
}

func (s statSlot) OnEntryBlocked(ctx *base.EntryContext, _ *base.BlockError) {
	n := int64(ctx.Input.BatchCount)
	if sn := ctx.StatNode; sn != nil {
		sn.AddCount(base.MetricEventBlock, n)
	}
	if ctx.Resource.FlowType() == base.Inbound {
		stat.InboundNode().AddCount(base.MetricEventBlock, n)
	}
}
