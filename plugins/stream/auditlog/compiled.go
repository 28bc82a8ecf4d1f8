package auditlog

import (
	"sort"
	"strings"

	"github.com/moeproxy/moe/plugins/stream/internal/logsink"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// compiled is what Init builds once per config version.
type compiled struct {
	headers   []recHeader     // included headers, in config order
	maskQuery map[string]bool // query parameter names
	fields    []recField      // in name order
	out       *logsink.Output // file sink
	http      *httpSink       // http sink
	queue     *logsink.Queue
	records   api.Counter
	dropped   api.Counter
	failed    api.Counter
	denied    api.Counter
}

type recHeader struct {
	key    []byte // `"name":`
	name   string // lower case
	masked bool
}

type recField struct {
	key []byte // `"name":`
	tpl *variables.Template
}

func jsonKey(name string) []byte { return append(logsink.AppendJSONString(nil, name), ':') }

// Init builds the masks and the record layout and opens the sink (a file that
// cannot be opened refuses the config), then starts the queue's writer. When
// the config is only checked (env.CheckOnly) nothing is opened, created or
// started: a file sink's path is checked without side effects (logsink.Check),
// an http sink's URL was checked by Validate.
func (c *Config) Init(env api.ConfigEnv) error {
	masked := c.maskedSet()
	seen := map[string]bool{}
	for _, h := range c.IncludeHeaders {
		n := strings.ToLower(h)
		if seen[n] {
			continue
		}
		seen[n] = true
		c.headers = append(c.headers, recHeader{key: jsonKey(n), name: n, masked: masked[n]})
	}
	if len(c.MaskQuery) > 0 {
		c.maskQuery = map[string]bool{}
		for _, q := range c.MaskQuery {
			c.maskQuery[q] = true
		}
	}
	names := make([]string, 0, len(c.Fields))
	for k := range c.Fields {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		c.fields = append(c.fields, recField{key: jsonKey(k), tpl: c.Fields[k]})
	}

	if env.CheckOnly() {
		if c.Sink.Type != "http" {
			if err := logsink.Check(c.Sink.Path); err != nil {
				return api.FieldErrorf("sink.path", "%v", err)
			}
		}
		return nil
	}
	m := env.Metrics()
	c.records = m.Counter("records")
	c.dropped = m.Counter("dropped")
	c.failed = m.Counter("failed")
	c.denied = m.Counter("denied_requests")
	opts := logsink.QueueOptions{
		Size:    c.QueueSize,
		Written: c.records,
		Dropped: c.dropped,
		Failed:  c.failed,
	}
	log := env.Log()
	if c.Sink.Type == "http" {
		c.http = newHTTPSink(&c.Sink)
		opts.Write = c.http.post
		opts.Linger = c.Sink.BatchInterval.D()
		opts.MaxBatchLines = c.Sink.BatchSize
		opts.MaxBatchBytes = 4 << 20
		opts.OnError = func(err error, lost int) {
			log.Errorf("audit collector %s: %d records lost: %v", c.http.name, lost, err)
		}
	} else {
		out, err := logsink.Acquire(c.Sink.Path, c.Sink.Rotation)
		if err != nil {
			return api.FieldErrorf("sink.path", "%v", err)
		}
		c.out = out
		opts.Write = func(b []byte, _ int) error { _, err := out.Write(b); return err }
		opts.OnError = func(err error, lost int) {
			log.Errorf("writing audit records to %s failed, %d lost: %v", out, lost, err)
		}
	}
	c.queue = logsink.NewQueue(opts)
	return nil
}

// Destroy sends what is queued (waiting at most sink.flush_timeout) and
// releases the sink.
func (c *Config) Destroy() {
	if c.queue != nil {
		c.queue.Close(c.Sink.FlushTimeout.D())
	}
	if c.out != nil {
		c.out.Release()
	}
	if c.http != nil {
		c.http.close()
	}
}
