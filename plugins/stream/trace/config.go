package trace

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// Config is the trace plugin's config.
type Config struct {
	// ServiceName is the service.name of exported spans.
	ServiceName string `json:"service_name"`
	// Sampling decides which traces are sampled (and exported).
	Sampling Sampling `json:"sampling"`
	// RequestID keeps or generates a request id header.
	RequestID RequestID `json:"request_id"`
	// Exporter sends sampled spans over OTLP/HTTP (no endpoint: propagation
	// only).
	Exporter Exporter `json:"exporter"`
	// ChildSpans adds one span per plugin call of the request (the
	// framework's call timings) under the gateway's span.
	ChildSpans bool `json:"child_spans"`
	// SpanName is the gateway span's name (default "<method> <route name>").
	SpanName *variables.Template `json:"span_name"`
	// Attributes are more span attributes: name -> template.
	Attributes map[string]*variables.Template `json:"attributes"`

	compiled
}

// Sampling is by ratio, and by the parent's flag when there is a parent.
type Sampling struct {
	// Ratio of new traces sampled, 0..1 (OpenTelemetry's TraceIDRatioBased
	// on the trace id).
	Ratio float64 `json:"ratio"`
	// ParentBased follows the sampled flag of a valid incoming traceparent;
	// false applies Ratio to every request.
	ParentBased bool `json:"parent_based"`
}

// RequestID is the request id header.
type RequestID struct {
	// Header is its name ("" turns request ids off).
	Header string `json:"header"`
	// Generate sets a UUID v4 when a request has none.
	Generate bool `json:"generate"`
	// IncludeInResponse copies it to the response.
	IncludeInResponse bool `json:"include_in_response"`
}

// Exporter is an OTLP/HTTP trace exporter (the OpenTelemetry Go SDK's
// batch span processor and otlptracehttp).
type Exporter struct {
	// Endpoint is the collector's traces URL, e.g.
	// http://127.0.0.1:4318/v1/traces ("": no export).
	Endpoint string `json:"endpoint"`
	// Headers are sent with every export (e.g. an API key); never logged.
	Headers map[string]string `json:"headers"`
	// Timeout bounds one export.
	Timeout api.Duration `json:"timeout"`
	// Compression is none or gzip.
	Compression string `json:"compression"`
	// BatchSize is the most spans in one export.
	BatchSize int `json:"batch_size"`
	// BatchTimeout is how long a batch waits for more spans.
	BatchTimeout api.Duration `json:"batch_timeout"`
	// QueueSize is how many finished spans may wait; more are dropped and
	// counted.
	QueueSize int `json:"queue_size"`
}

func newConfig() any {
	return &Config{
		ServiceName: "moe",
		Sampling:    Sampling{Ratio: 1, ParentBased: true},
		RequestID:   RequestID{Header: "x-request-id", Generate: true, IncludeInResponse: true},
		Exporter: Exporter{
			Timeout:      api.Duration(5e9),
			Compression:  "none",
			BatchSize:    512,
			BatchTimeout: api.Duration(1e9),
			QueueSize:    2048,
		},
	}
}

// Validate checks what needs no I/O.
func (c *Config) Validate() error {
	if c.ServiceName == "" {
		return api.FieldErrorf("service_name", "must not be empty")
	}
	if err := api.CheckRange("sampling.ratio", c.Sampling.Ratio, 0, 1); err != nil {
		return err
	}
	if c.RequestID.Header != "" {
		if err := api.CheckHeaderName("request_id.header", c.RequestID.Header); err != nil {
			return err
		}
		switch strings.ToLower(c.RequestID.Header) {
		case "traceparent", "tracestate":
			return api.FieldErrorf("request_id.header", "must not be a trace context header")
		}
	}
	for k, v := range c.Attributes {
		if k == "" {
			return api.FieldErrorf("attributes", "names must not be empty")
		}
		if v == nil {
			return api.FieldErrorf(api.Field("attributes", k), "needs a template")
		}
	}
	if e := &c.Exporter; e.Endpoint != "" {
		u, err := url.Parse(e.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || !validPort(u.Port()) {
			return api.FieldErrorf("exporter.endpoint", "must be an http:// or https:// URL with a host (the collector's traces URL, e.g. http://127.0.0.1:4318/v1/traces), got %q", e.Endpoint)
		}
		for k, v := range e.Headers {
			if err := api.CheckHeaderName(api.Field("exporter.headers", k), k); err != nil {
				return err
			}
			if strings.ContainsAny(v, "\r\n\x00") {
				return api.FieldErrorf(api.Field("exporter.headers", k), "value must not contain CR, LF or NUL")
			}
		}
		if err := api.CheckAbove("exporter.timeout", e.Timeout.D(), 0); err != nil {
			return err
		}
		if err := api.CheckOneOf("exporter.compression", e.Compression, "none", "gzip"); err != nil {
			return err
		}
		if err := api.CheckRange("exporter.batch_size", e.BatchSize, 1, 100000); err != nil {
			return err
		}
		if err := api.CheckAbove("exporter.batch_timeout", e.BatchTimeout.D(), 0); err != nil {
			return err
		}
		if err := api.CheckRange("exporter.queue_size", e.QueueSize, 1, 1<<20); err != nil {
			return err
		}
		if e.BatchSize > e.QueueSize {
			return api.FieldErrorf("exporter.batch_size", "must not exceed exporter.queue_size (%d), got %d", e.QueueSize, e.BatchSize)
		}
	}
	return nil
}

// validPort: no port (the scheme's), or 1..65535.
func validPort(p string) bool {
	if p == "" {
		return true
	}
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}
