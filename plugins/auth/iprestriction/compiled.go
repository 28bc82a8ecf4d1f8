package iprestriction

import (
	"errors"
	"fmt"

	"github.com/moeproxy/moe/shared/api"
)

// compiled is what a config version builds once: the address sets and the
// fallback choice (Validate, where compiling is the check), the counters and
// the reply headers (Init).
type compiled struct {
	allow, deny    *ipSet
	fallbackRemote bool
	replyHeaders   api.Headers
	m              metricSet
}

func compileList(field string, entries []string) (*ipSet, error) {
	s, err := newIPSet(entries)
	if err != nil {
		var ee *entryError
		if errors.As(err, &ee) {
			return nil, api.FieldErrorf(fmt.Sprintf("%s[%d]", field, ee.index), "%v", ee.err)
		}
		return nil, api.FieldErrorf(field, "%v", err)
	}
	return s, nil
}

// Init defines the metrics and the reply headers once per config version.
func (c *Config) Init(env api.ConfigEnv) error {
	c.m = newMetrics(env.Metrics())
	// The framework copies reply headers, so one map serves every request.
	c.replyHeaders = api.Headers{"content-type": {"text/plain; charset=utf-8"}}
	return nil
}
