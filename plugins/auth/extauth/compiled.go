package extauth

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
)

// runtime is everything Init precomputes from a Config, once per config
// version.
type runtime struct {
	client   *http.Client
	scheme   string
	host     string
	basePath string // URL path + path_prefix, without a trailing "/" duplicate
	service  string // scheme://host + basePath, for logs

	timeout         time.Duration
	allowed         []string // lower case
	toAdd           [][2]string
	body            *BodyConfig
	upstream        []string        // lower case
	client403       map[string]bool // allowed_client_headers, nil = all but excluded
	maxRespBody     int64
	failOpen        bool
	failOpenHeader  bool
	errorReply      *authn.Reply
	bodyTooLarge    *authn.Reply
	consumerFrom    string
	consumerHeader  string
	cache           *cache
	keyHeaders      []string
	keyIncludesPath bool

	allowedC, deniedC, errorC, timeoutC, cacheHitC, failOpenC, tooLargeC api.Counter
}

func lowerAll(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = strings.ToLower(s)
	}
	return out
}

// Init builds the HTTP client, the cache and the metrics of this config
// version. When the config is only checked (env.CheckOnly) no HTTP client is
// built: the service is never reached.
func (c *Config) Init(env api.ConfigEnv) error {
	rt, err := newRuntime(c, env)
	if err != nil {
		return err
	}
	c.rt = rt
	c.filter = &filter{rt: rt}
	return nil
}

// Destroy closes the idle connections of this config version.
func (c *Config) Destroy() {
	if c.rt != nil && c.rt.client != nil {
		c.rt.client.CloseIdleConnections()
	}
}

func newRuntime(c *Config, env api.ConfigEnv) (*runtime, error) {
	u, err := url.Parse(c.URL)
	if err != nil {
		return nil, api.FieldErrorf("url", "%v", err)
	}
	rt := &runtime{
		scheme:          u.Scheme,
		host:            u.Host,
		basePath:        strings.TrimSuffix(u.Path, "/") + c.PathPrefix,
		timeout:         c.Timeout.D(),
		allowed:         lowerAll(c.AllowedHeaders),
		body:            c.WithRequestBody,
		upstream:        lowerAll(c.AllowedUpstreamHeaders),
		maxRespBody:     int64(c.MaxResponseBody),
		failOpen:        c.FailureModeAllow,
		failOpenHeader:  c.FailureModeAllowHeaderAdd,
		consumerFrom:    strings.ToLower(c.ConsumerFromHeader),
		consumerHeader:  strings.ToLower(c.ConsumerHeader),
		keyIncludesPath: c.Cache.KeyIncludesPath,
	}
	rt.service = rt.scheme + "://" + rt.host + rt.basePath
	for k, v := range c.HeadersToAdd {
		rt.toAdd = append(rt.toAdd, [2]string{strings.ToLower(k), v})
	}
	if c.AllowedClientHeaders != nil {
		rt.client403 = map[string]bool{}
		for _, h := range lowerAll(c.AllowedClientHeaders) {
			rt.client403[h] = true
		}
	}
	rt.errorReply = authn.NewReply(c.StatusOnError, "", "authorization service unavailable")
	rt.bodyTooLarge = authn.NewReply(413, "", "request body too large for authorization")
	if c.Cache.TTL > 0 {
		rt.cache = newCache(c.Cache.MaxEntries, c.Cache.TTL.D())
		rt.keyHeaders = lowerAll(c.Cache.KeyHeaders)
		if len(c.Cache.KeyHeaders) == 0 {
			rt.keyHeaders = rt.allowed
		}
	}
	m := env.Metrics()
	rt.allowedC = m.Counter("allowed")
	rt.deniedC = m.Counter("denied")
	rt.errorC = m.Counter("error")
	rt.timeoutC = m.Counter("timeout")
	rt.cacheHitC = m.Counter("cache_hit")
	rt.failOpenC = m.Counter("failure_mode_allowed")
	rt.tooLargeC = m.Counter("denied_body_too_large")
	if env.CheckOnly() {
		return rt, nil
	}
	// One client per config version: connections to the service are reused
	// across requests and closed on Destroy. No proxy from the environment:
	// the service is reached directly, like an Envoy cluster.
	rt.client = &http.Client{
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           (&net.Dialer{Timeout: rt.timeout, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:          c.MaxIdleConnections,
			MaxIdleConnsPerHost:   c.MaxIdleConnections,
			IdleConnTimeout:       60 * time.Second,
			TLSHandshakeTimeout:   rt.timeout,
			DisableCompression:    true,
			ResponseHeaderTimeout: rt.timeout,
		},
		// Redirects from the service are answers for the client, not for us.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return rt, nil
}
