package sentinel

import (
	"math"

	"github.com/alibaba/sentinel-golang/core/base"
	"github.com/alibaba/sentinel-golang/core/stat"
	"github.com/alibaba/sentinel-golang/core/system"
	"github.com/alibaba/sentinel-golang/core/system_metric"

	"github.com/moeproxy/moe/shared/api"
)

// SystemRule is an adaptive system protection rule (sentinel system rule):
// config, validation and translation to sentinel's system.Rule. System rules
// are process-wide in sentinel: see README "System protection".
type SystemRule struct {
	// Metric: "load", "cpu" (usage ratio 0..1), "concurrency", "inbound_qps" or
	// "avg_rt" (milliseconds).
	Metric string `json:"metric"`
	// Threshold is the value of Metric past which requests are shed.
	Threshold float64 `json:"threshold"`
	// Adaptive: "bbr" (default for load/cpu: only shed while concurrency exceeds
	// the estimated capacity) or "none".
	Adaptive string `json:"adaptive"`
}

var (
	systemMetrics = []string{"load", "cpu", "concurrency", "inbound_qps", "avg_rt"}
	adaptiveModes = []string{"bbr", "none"}
)

func (r *SystemRule) validate(f string) error {
	if err := api.CheckOneOf(api.Field(f, "metric"), r.Metric, systemMetrics...); err != nil {
		return err
	}
	if !(r.Threshold > 0) || math.IsInf(r.Threshold, 0) {
		return api.FieldErrorf(api.Field(f, "threshold"), "must be > 0, got %v", r.Threshold)
	}
	if r.Metric == "cpu" && r.Threshold > 1 {
		return api.FieldErrorf(api.Field(f, "threshold"), "cpu is a usage ratio in (0, 1], got %v", r.Threshold)
	}
	if r.Adaptive == "" {
		r.Adaptive = "bbr"
	}
	if err := api.CheckOneOf(api.Field(f, "adaptive"), r.Adaptive, adaptiveModes...); err != nil {
		return err
	}
	if r.Adaptive == "bbr" && r.Metric != "load" && r.Metric != "cpu" {
		// sentinel applies BBR only to load and cpu rules.
		r.Adaptive = "none"
	}
	return nil
}

func (r *SystemRule) sentinel() *system.Rule {
	sr := &system.Rule{TriggerCount: r.Threshold, Strategy: system.NoAdaptive}
	switch r.Metric {
	case "load":
		sr.MetricType = system.Load
	case "cpu":
		sr.MetricType = system.CpuUsage
	case "concurrency":
		sr.MetricType = system.Concurrency
	case "inbound_qps":
		sr.MetricType = system.InboundQPS
	case "avg_rt":
		sr.MetricType = system.AvgRT
	}
	if r.Adaptive == "bbr" {
		sr.Strategy = system.BBR
	}
	return sr
}

// systemValue reads the statistic a system rule checks, from sentinel.
func systemValue(t system.MetricType) float64 {
	switch t {
	case system.InboundQPS:
		return stat.InboundNode().GetQPS(base.MetricEventPass)
	case system.Concurrency:
		return float64(stat.InboundNode().CurrentConcurrency())
	case system.AvgRT:
		return stat.InboundNode().AvgRT()
	case system.Load:
		return system_metric.CurrentLoad()
	case system.CpuUsage:
		return system_metric.CurrentCpuUsage()
	}
	return -1
}
