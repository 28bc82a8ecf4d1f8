package accesslog

import (
	"sort"

	"github.com/moeproxy/moe/plugins/stream/internal/logsink"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// compiled is what Init builds once per config version.
type compiled struct {
	format *variables.Template
	fields []jsonField // JSON mode, in name order
	out    *logsink.Output
	queue  *logsink.Queue

	logged, dropped, failed api.Counter
}

type jsonField struct {
	prefix []byte // `{"name":` or `,"name":`
	tpl    *variables.Template
}

// defaultFormat is compiled in init (vars.go), after its variables are
// registered.
var defaultFormat *variables.Template

// Init opens the output (refusing the config if the file cannot be
// written), builds the JSON field order and starts the queue's writer. When
// the config is only checked (env.CheckOnly) nothing is opened, created or
// started: the path is checked without side effects (logsink.Check: an
// existing file writable, or the directories to create it in creatable).
func (c *Config) Init(env api.ConfigEnv) error {
	if c.JSON != nil {
		names := make([]string, 0, len(c.JSON))
		for k := range c.JSON {
			names = append(names, k)
		}
		sort.Strings(names)
		for i, k := range names {
			sep := byte(',')
			if i == 0 {
				sep = '{'
			}
			p := logsink.AppendJSONString([]byte{sep}, k)
			c.fields = append(c.fields, jsonField{prefix: append(p, ':'), tpl: c.JSON[k]})
		}
	} else {
		c.format = c.Format
		if c.format == nil {
			c.format = defaultFormat
		}
	}
	if env.CheckOnly() {
		if err := logsink.Check(c.Path); err != nil {
			return api.FieldErrorf("path", "%v", err)
		}
		return nil
	}
	out, err := logsink.Acquire(c.Path, c.Rotation)
	if err != nil {
		return api.FieldErrorf("path", "%v", err)
	}
	c.out = out
	m := env.Metrics()
	c.logged = m.Counter("lines")
	c.dropped = m.Counter("dropped")
	c.failed = m.Counter("write_failed")
	log := env.Log()
	c.queue = logsink.NewQueue(logsink.QueueOptions{
		Size:    c.QueueSize,
		Write:   func(b []byte, _ int) error { _, err := out.Write(b); return err },
		Written: c.logged,
		Dropped: c.dropped,
		Failed:  c.failed,
		OnError: func(err error, lost int) {
			log.Errorf("writing to %s failed, %d lines lost: %v", out, lost, err)
		},
	})
	return nil
}

// Destroy writes what is queued (waiting at most flush_timeout) and gives the
// output back (the last config using a file closes it).
func (c *Config) Destroy() {
	if c.queue != nil {
		c.queue.Close(c.FlushTimeout.D())
	}
	if c.out != nil {
		c.out.Release()
	}
}
