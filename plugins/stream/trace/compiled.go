package trace

import (
	"net/url"
	"sort"
	"strings"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// compiled is what Init builds once per config version.
type compiled struct {
	bound     uint64 // sampledByRatio threshold
	ridHeader string // lower case
	attrs     []attrTpl
	pipe      *pipeline

	started, continued, replaced, sampled, generated api.Counter
}

type attrTpl struct {
	name string
	tpl  *variables.Template
}

// Init computes the sampling threshold and attribute order, defines the
// metrics and, with an endpoint, sets up the exporter (shared by configs
// with the same settings). When the config is only checked (env.CheckOnly)
// no exporter or SDK pipeline is set up: Validate checked the endpoint URL.
func (c *Config) Init(env api.ConfigEnv) error {
	c.bound = ratioBound(c.Sampling.Ratio)
	c.ridHeader = strings.ToLower(c.RequestID.Header)
	names := make([]string, 0, len(c.Attributes))
	for k := range c.Attributes {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		c.attrs = append(c.attrs, attrTpl{k, c.Attributes[k]})
	}
	m := env.Metrics()
	c.started = m.Counter("traces_started")
	c.continued = m.Counter("traces_continued")
	c.replaced = m.Counter("traceparent_invalid")
	c.sampled = m.Counter("sampled")
	c.generated = m.Counter("request_ids_generated")
	if c.Exporter.Endpoint != "" && !env.CheckOnly() {
		p, err := acquirePipeline(c.ServiceName, &c.Exporter, env)
		if err != nil {
			return err
		}
		c.pipe = p
	}
	return nil
}

// Destroy releases the exporter; the last config using it exports what is
// queued (waiting at most exporter.timeout) and shuts it down.
func (c *Config) Destroy() {
	if c.pipe != nil {
		c.pipe.release(c.Exporter.Timeout.D())
		c.pipe = nil
	}
}

// redact removes credentials from a URL for logs.
func redact(u string) string {
	if p, err := url.Parse(u); err == nil {
		return p.Redacted()
	}
	return "(endpoint)"
}
