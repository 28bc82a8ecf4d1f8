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
// the same slots in the same order) with one change: the statistic slot is
// statSlot. Every entry goes through it (rt.opts), so the plugin does not
// depend on sentinel's global chain.
func newSlotChain() *base.SlotChain {
	sc := base.NewSlotChain()
	sc.AddStatPrepareSlot(stat.DefaultResourceNodePrepareSlot)
	sc.AddRuleCheckSlot(system.DefaultAdaptiveSlot)
	sc.AddRuleCheckSlot(flow.DefaultSlot)
	sc.AddRuleCheckSlot(isolation.DefaultSlot)
	sc.AddRuleCheckSlot(hotspot.DefaultSlot)
	sc.AddRuleCheckSlot(circuitbreaker.DefaultSlot)
	sc.AddStatSlot(statSlot{stat.DefaultSlot})
	sc.AddStatSlot(log.DefaultSlot)
	sc.AddStatSlot(flow.DefaultStandaloneStatSlot)
	sc.AddStatSlot(hotspot.DefaultConcurrencyStatSlot)
	sc.AddStatSlot(circuitbreaker.DefaultMetricStatSlot)
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

// entryChain is the slot chain of every entry the plugin makes. Global as
// sentinel's own default chain is: the slots are stateless, and the chain
// only pools entry contexts.
var entryChain = newSlotChain()
