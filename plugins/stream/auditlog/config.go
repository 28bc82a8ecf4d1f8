package auditlog

import (
	"net/url"
	"strings"

	"github.com/moeproxy/moe/plugins/stream/internal/logsink"
	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/match"
	"github.com/moeproxy/moe/shared/variables"
)

// AlwaysMasked are request headers that carry credentials: recorded (when
// included) only as "***", whatever mask_headers says.
var AlwaysMasked = []string{"authorization", "proxy-authorization", "cookie", "x-api-key"}

// DefaultMaskQuery are the query parameters masked in the recorded path
// unless mask_query is set.
var DefaultMaskQuery = []string{"api_key", "apikey", "key", "token", "access_token", "signature", "password", "secret"}

// Config is the audit-log plugin's config.
type Config struct {
	// Sink is where records go.
	Sink Sink `json:"sink"`
	// IncludeHeaders are request headers copied into the record ("headers").
	IncludeHeaders []string `json:"include_headers"`
	// MaskHeaders are headers whose values are never recorded: an included
	// one is written as "***", and a field template may not read one. The
	// credential headers of AlwaysMasked are masked too.
	MaskHeaders []string `json:"mask_headers"`
	// MaskQuery are query parameters whose values are written as "***" in
	// the recorded path (default DefaultMaskQuery; [] masks none).
	MaskQuery []string `json:"mask_query"`
	// Fields are more values for the record ("fields"): name -> template.
	Fields map[string]*variables.Template `json:"fields"`
	// Match audits only the requests it matches (unset: all).
	Match *match.Match `json:"match"`
	// QueueSize is how many records may wait for the sink; one more is
	// dropped and counted.
	QueueSize int `json:"queue_size"`

	compiled
}

// Sink is a file (or stdout/stderr) or an HTTP collector.
type Sink struct {
	// Type is file or http.
	Type string `json:"type"`
	// Path (file): stdout, stderr or an absolute file path.
	Path string `json:"path"`
	// Rotation (file): size-based rotation.
	Rotation logsink.Rotation `json:"rotation"`
	// URL (http): records are POSTed there as NDJSON, in batches.
	URL string `json:"url"`
	// Headers (http): sent with every POST, e.g. the collector's token.
	// Their values are never logged.
	Headers map[string]string `json:"headers"`
	// Timeout (http): of one POST, connection included.
	Timeout api.Duration `json:"timeout"`
	// BatchSize (http): records per POST at most.
	BatchSize int `json:"batch_size"`
	// BatchInterval (http): how long a batch waits for more records.
	BatchInterval api.Duration `json:"batch_interval"`
	// FlushTimeout: how long destroying the config waits for the queue.
	FlushTimeout api.Duration `json:"flush_timeout"`
}

func newConfig() any {
	return &Config{
		Sink: Sink{
			Type:          "file",
			Path:          "stdout",
			Rotation:      logsink.DefaultRotation,
			Timeout:       api.Duration(2e9),
			BatchSize:     100,
			BatchInterval: api.Duration(1e9),
			FlushTimeout:  api.Duration(5e9),
		},
		// A copy: decoding a list reuses the slice it decodes into.
		MaskQuery: append([]string(nil), DefaultMaskQuery...),
		QueueSize: 10000,
	}
}

// Validate checks what needs no I/O.
func (c *Config) Validate() error {
	if err := c.Sink.validate(); err != nil {
		return err
	}
	masked := c.maskedSet()
	for i, h := range c.IncludeHeaders {
		if err := api.CheckHeaderName(api.Field("include_headers", i), h); err != nil {
			return err
		}
	}
	for i, h := range c.MaskHeaders {
		if err := api.CheckHeaderName(api.Field("mask_headers", i), h); err != nil {
			return err
		}
	}
	for i, q := range c.MaskQuery {
		if q == "" {
			return api.FieldErrorf(api.Field("mask_query", i), "must not be empty")
		}
	}
	for name, t := range c.Fields {
		f := api.Field("fields", name)
		if name == "" {
			return api.FieldErrorf("fields", "field names must not be empty")
		}
		if t == nil {
			return api.FieldErrorf(f, "needs a template")
		}
		if h := readsMasked(t.String(), masked); h != "" {
			return api.FieldErrorf(f, "reads masked header %s: credentials are never recorded", h)
		}
	}
	return api.CheckRange("queue_size", c.QueueSize, 1, 1<<20)
}

func (s *Sink) validate() error {
	if err := api.CheckOneOf("sink.type", s.Type, "file", "http"); err != nil {
		return err
	}
	if err := api.CheckAbove("sink.flush_timeout", s.FlushTimeout.D(), 0); err != nil {
		return err
	}
	if s.Type == "file" {
		if s.URL != "" {
			return api.FieldErrorf("sink.url", "is for sink type http")
		}
		if err := logsink.ValidatePath("sink.path", s.Path); err != nil {
			return err
		}
		return s.Rotation.Validate("sink.rotation")
	}
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return api.FieldErrorf("sink.url", "must be an http:// or https:// URL with a host, got %q", s.URL)
	}
	for k, v := range s.Headers {
		if err := api.CheckHeaderName(api.Field("sink.headers", k), k); err != nil {
			return err
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return api.FieldErrorf(api.Field("sink.headers", k), "value must not contain CR, LF or NUL")
		}
	}
	if err := api.CheckAbove("sink.timeout", s.Timeout.D(), 0); err != nil {
		return err
	}
	if err := api.CheckRange("sink.batch_size", s.BatchSize, 1, 10000); err != nil {
		return err
	}
	return api.CheckMin("sink.batch_interval", s.BatchInterval.D(), 0)
}

// maskedSet is every masked header name, lower case.
func (c *Config) maskedSet() map[string]bool {
	m := map[string]bool{}
	for _, h := range AlwaysMasked {
		m[h] = true
	}
	for _, h := range c.MaskHeaders {
		m[strings.ToLower(h)] = true
	}
	return m
}

// readsMasked returns the masked header a template source reads ("" if
// none): $header_<name> or ${header_<name>}.
func readsMasked(src string, masked map[string]bool) string {
	s := strings.ToLower(src)
	for {
		i := strings.Index(s, "header_")
		if i < 0 {
			return ""
		}
		s = s[i+len("header_"):]
		j := 0
		for j < len(s) && (s[j] == '-' || s[j] == '_' || s[j] == '.' || ('a' <= s[j] && s[j] <= 'z') || ('0' <= s[j] && s[j] <= '9')) {
			j++
		}
		if name := strings.TrimRight(s[:j], "."); masked[name] {
			return name
		}
	}
}
