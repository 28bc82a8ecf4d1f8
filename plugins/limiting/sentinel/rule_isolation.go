package sentinel

import (
	"github.com/alibaba/sentinel-golang/core/isolation"

	"github.com/moeproxy/moe/shared/api"
)

// IsolationRule limits concurrent requests (sentinel isolation rule).
type IsolationRule struct {
	Resource       string `json:"resource"`
	MaxConcurrency uint32 `json:"max_concurrency"`
}

func (r *IsolationRule) validate(f string) error {
	if r.MaxConcurrency == 0 {
		return api.FieldErrorf(f+".max_concurrency", "must be > 0")
	}
	return checkResourceName(f+".resource", r.Resource)
}

func (r *IsolationRule) sentinel(res string) *isolation.Rule {
	return &isolation.Rule{
		Resource:   res,
		MetricType: isolation.Concurrency,
		Threshold:  r.MaxConcurrency,
	}
}
