package extauth

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
)

// Config of the ext-auth plugin. Field names follow Envoy's ext_authz HTTP
// service where there is one. See README.md for the reference.
type Config struct {
	// URL of the authorization service ("http://127.0.0.1:9000" or with a base
	// path). The check request goes to URL + path_prefix + the original :path
	// (with its query), with the original method.
	URL        string `json:"url"`
	PathPrefix string `json:"path_prefix,omitempty"`
	// Timeout of one check (Envoy's default, 200ms).
	Timeout api.Duration `json:"timeout"`
	// AllowedHeaders are the request headers sent to the service (Envoy always
	// sends Authorization; so does the default here).
	AllowedHeaders []string `json:"allowed_headers"`
	// HeadersToAdd are static headers added to every check request (e.g. a key
	// for the authorization service itself).
	HeadersToAdd map[string]string `json:"headers_to_add,omitempty"`
	// WithRequestBody sends the request body (buffered) to the service.
	WithRequestBody *BodyConfig `json:"with_request_body,omitempty"`
	// AllowedUpstreamHeaders are copied from an allowing (2xx) response to the
	// upstream request. They are also removed from the client's request when
	// the service does not send them, so a client cannot supply them itself.
	AllowedUpstreamHeaders []string `json:"allowed_upstream_headers,omitempty"`
	// AllowedClientHeaders are copied from a denying response to the client.
	// Unset: every header except hop-by-hop ones, content-length and host (Envoy's default).
	AllowedClientHeaders []string `json:"allowed_client_headers,omitempty"`
	// MaxResponseBody caps the denial body relayed to the client (bytes).
	MaxResponseBody int `json:"max_response_body"`
	// FailureModeAllow lets requests through when the service fails (error,
	// timeout); otherwise they get StatusOnError.
	FailureModeAllow bool `json:"failure_mode_allow"`
	// FailureModeAllowHeaderAdd adds x-envoy-auth-failure-mode-allowed: true
	// upstream when a request passed because of FailureModeAllow.
	FailureModeAllowHeaderAdd bool `json:"failure_mode_allow_header_add"`
	// StatusOnError is the status when the service fails and
	// FailureModeAllow is false (Envoy: 403).
	StatusOnError int `json:"status_on_error"`
	// ConsumerFromHeader names a response header of an allowing response that
	// holds the consumer name (e.g. "x-user"); the consumer is then set for
	// later plugins (and later golang filters).
	ConsumerFromHeader string `json:"consumer_from_header,omitempty"`
	// ConsumerHeader forwards the consumer name upstream ("" disables): the
	// one the service named, else the one an earlier auth plugin set; a
	// client's value is removed.
	ConsumerHeader string `json:"consumer_header"`
	// MaxIdleConnections kept open to the service (connection reuse).
	MaxIdleConnections int `json:"max_idle_connections"`
	// Cache caches allow and deny results (never errors).
	Cache CacheConfig `json:"cache"`

	rt     *runtime // built by Init (compiled.go)
	filter *filter  // shared by all requests of this config: no allocation per request
}

// BodyConfig is Envoy's with_request_body.
type BodyConfig struct {
	MaxRequestBytes int `json:"max_request_bytes"`
	// AllowPartialMessage sends the first max_request_bytes of a larger body
	// (with x-envoy-auth-partial-body: true) instead of answering 413.
	AllowPartialMessage bool `json:"allow_partial_message"`
}

// CacheConfig is the result cache; it is on when ttl > 0.
type CacheConfig struct {
	TTL api.Duration `json:"ttl"`
	// MaxEntries bounds the cache (least recently used entries go first).
	MaxEntries int `json:"max_entries"`
	// KeyHeaders make up the key (default: allowed_headers).
	KeyHeaders []string `json:"key_headers,omitempty"`
	// KeyIncludesPath adds method and :path to the key. Keep it unless the
	// service's answer never depends on the path.
	KeyIncludesPath bool `json:"key_includes_path"`
}

// newConfig returns the defaults.
func newConfig() any {
	return &Config{
		Timeout:            api.Duration(200 * time.Millisecond),
		AllowedHeaders:     []string{"authorization"},
		MaxResponseBody:    64 << 10,
		StatusOnError:      403,
		ConsumerHeader:     "x-consumer-name",
		MaxIdleConnections: 64,
		Cache:              CacheConfig{MaxEntries: 10000, KeyIncludesPath: true},
	}
}

// framingHeaders describe the connection or the message framing, not the request: copying
// them between the client, the auth service and the upstream could desynchronise a connection
// or reroute the request, so no allow-list may name them.
var framingHeaders = map[string]bool{
	"connection": true, "keep-alive": true, "proxy-connection": true, "transfer-encoding": true,
	"content-length": true, "te": true, "trailer": true, "upgrade": true, "host": true,
}

func checkNames(field string, names []string, refuseFraming bool) error {
	for i, n := range names {
		if !api.ValidHeaderName(n) {
			return api.FieldErrorf(fmt.Sprintf("%s[%d]", field, i), "invalid header name %q", n)
		}
		if refuseFraming && framingHeaders[strings.ToLower(n)] {
			return api.FieldErrorf(fmt.Sprintf("%s[%d]", field, i), "%q is a connection or framing header and cannot be copied", n)
		}
	}
	return nil
}

// Validate checks values.
func (c *Config) Validate() error {
	u, err := url.Parse(c.URL)
	if c.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return api.FieldErrorf("url", "must be an absolute http(s) URL, got %q", c.URL)
	}
	if u.User != nil {
		return api.FieldErrorf("url", "must not carry credentials (use headers_to_add)")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return api.FieldErrorf("url", "must not have a query or fragment")
	}
	if c.PathPrefix != "" && (!strings.HasPrefix(c.PathPrefix, "/") || strings.ContainsAny(c.PathPrefix, "?# \t\r\n")) {
		return api.FieldErrorf("path_prefix", "must start with / and hold no query, fragment or spaces")
	}
	if err := api.CheckRange("timeout", c.Timeout.D(), time.Millisecond, time.Minute); err != nil {
		return err
	}
	for _, l := range []struct {
		f       string
		v       []string
		copying bool
	}{{"allowed_headers", c.AllowedHeaders, true}, {"allowed_upstream_headers", c.AllowedUpstreamHeaders, true}, {"allowed_client_headers", c.AllowedClientHeaders, true}, {"cache.key_headers", c.Cache.KeyHeaders, false}} {
		if err := checkNames(l.f, l.v, l.copying); err != nil {
			return err
		}
	}
	for k, v := range c.HeadersToAdd {
		if !api.ValidHeaderName(k) {
			return api.FieldErrorf("headers_to_add."+k, "invalid header name")
		}
		if !consumer.SafeHeaderValue(v) {
			return api.FieldErrorf("headers_to_add."+k, "value holds control characters")
		}
	}
	if b := c.WithRequestBody; b != nil {
		if err := api.CheckRange("with_request_body.max_request_bytes", b.MaxRequestBytes, 1, 64<<20); err != nil {
			return err
		}
	}
	if err := api.CheckRange("max_response_body", c.MaxResponseBody, 0, 1<<20); err != nil {
		return err
	}
	// Not CheckStatus: like Envoy's status_on_error, any status may be chosen
	// (a 2xx too, for clients that cannot handle errors).
	if err := api.CheckRange("status_on_error", c.StatusOnError, 200, 599); err != nil {
		return err
	}
	if c.ConsumerFromHeader != "" && !api.ValidHeaderName(c.ConsumerFromHeader) {
		return api.FieldErrorf("consumer_from_header", "invalid header name %q", c.ConsumerFromHeader)
	}
	if c.ConsumerHeader != "" && !api.ValidHeaderName(c.ConsumerHeader) {
		return api.FieldErrorf("consumer_header", "invalid header name %q", c.ConsumerHeader)
	}
	if err := api.CheckRange("max_idle_connections", c.MaxIdleConnections, 0, 10000); err != nil {
		return err
	}
	if err := api.CheckMin("cache.ttl", c.Cache.TTL.D(), 0); err != nil {
		return err
	}
	if c.Cache.TTL > 0 {
		return api.CheckRange("cache.max_entries", c.Cache.MaxEntries, 1, 10_000_000)
	}
	return nil
}

// Needs: the check is network I/O, so OnReceive may block (it then runs in a
// goroutine and Envoy's worker never waits). The body is buffered only when
// with_request_body is set; without allow_partial_message a larger body gets
// 413 before it is buffered in full.
func (c *Config) Needs() api.Needs {
	n := api.Needs{Phase: api.AfterRoute, MayBlock: api.BlockReceive}
	if b := c.WithRequestBody; b != nil {
		n.RequestBody = api.WholeBody
		if !b.AllowPartialMessage {
			n.MaxRequestBody = b.MaxRequestBytes
		}
	}
	return n
}
