package sentinel

import (
	"github.com/alibaba/sentinel-golang/core/isolation"

	"github.com/moeproxy/moe/shared/api"
)

// IsolationRule limits concurrent requests (sentinel isolation rule):
// config, validation and translation to sentinel's isolation.Rule.
type IsolationRule struct {
	// Resource restricts the rule to one rendered name (empty: every name).
	Resource string `json:"resource"`
	// MaxConcurrency is how many requests may be in flight at once.
	MaxConcurrency uint32 `json:"max_concurrency"`
}

func (r *IsolationRule) validate(f string) error {
	if err := api.CheckMin(api.Field(f, "max_concurrency"), r.MaxConcurrency, 1); err != nil {
		return err
	}
	return checkResourceName(api.Field(f, "resource"), r.Resource)
}

func (r *IsolationRule) sentinel(res string) *isolation.Rule {
	return &isolation.Rule{
		Resource:   res,
		MetricType: isolation.Concurrency,
		Threshold:  r.MaxConcurrency,
	}
}
