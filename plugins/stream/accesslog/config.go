package accesslog

import (
	"github.com/moeproxy/moe/plugins/stream/internal/logsink"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/match"
	"github.com/moeproxy/moe/shared/variables"
)

// DefaultFormat is the text line written when neither format nor json is
// set: nginx's "combined" shape with moe's variables.
const DefaultFormat = `$remote_addr - $consumer [$time_iso8601] "$method $request_uri $server_protocol" $status $duration_ms "$header_referer" "$header_user-agent" $request_id`

// Config is the access-log plugin's config.
type Config struct {
	// Format is one text line of variables per request (default
	// DefaultFormat). Control characters in values are written as \xHH so a
	// value cannot split a line.
	Format *variables.Template `json:"format"`
	// JSON writes one JSON object per line instead: field name -> template
	// (fields in name order, values as JSON strings). Exclusive with Format.
	JSON map[string]*variables.Template `json:"json"`
	// Path is where lines go: stdout (default), stderr, or an absolute file
	// path (created with its directory; rotated by size).
	Path string `json:"path"`
	// Rotation is the file's size-based rotation (ignored for stdout/stderr).
	Rotation logsink.Rotation `json:"rotation"`
	// QueueSize is how many lines may wait for the writer; a line that finds
	// the queue full is dropped and counted.
	QueueSize int `json:"queue_size"`
	// FlushTimeout bounds how long destroying the config waits for the queue
	// to be written.
	FlushTimeout api.Duration `json:"flush_timeout"`
	// Match logs only the requests it matches (unset: every request).
	Match *match.Match `json:"match"`

	compiled
}

func newConfig() any {
	return &Config{
		Path:         "stdout",
		Rotation:     logsink.DefaultRotation,
		QueueSize:    4096,
		FlushTimeout: api.Duration(5e9),
	}
}

// Validate checks what needs no I/O.
func (c *Config) Validate() error {
	if c.Format != nil && c.JSON != nil {
		return api.FieldErrorf("json", "cannot be set together with format (one line shape per config)")
	}
	if c.JSON != nil && len(c.JSON) == 0 {
		return api.FieldErrorf("json", "needs at least one field")
	}
	for k, v := range c.JSON {
		if k == "" {
			return api.FieldErrorf("json", "field names must not be empty")
		}
		if v == nil {
			return api.FieldErrorf(api.Field("json", k), "needs a template")
		}
	}
	if err := logsink.ValidatePath("path", c.Path); err != nil {
		return err
	}
	if err := c.Rotation.Validate("rotation"); err != nil {
		return err
	}
	if err := api.CheckRange("queue_size", c.QueueSize, 1, 1<<20); err != nil {
		return err
	}
	return api.CheckAbove("flush_timeout", c.FlushTimeout.D(), 0)
}
