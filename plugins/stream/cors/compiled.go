package cors

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/moeproxy/moe/shared/api"
)

// compiled is what Init builds once per config version: origin indexes,
// method and header sets, the header values a reply carries, metrics.
type compiled struct {
	anyOrigin bool
	exact     map[string]struct{}
	wildcards []origin
	regexes   []*regexp.Regexp

	anyMethod    bool
	methods      map[string]struct{}
	methodsValue string
	anyHeader    bool
	headers      map[string]struct{}
	headersValue string
	exposeValue  string
	maxAgeValue  string
	// varies: the answer depends on the Origin (not "*" without
	// credentials), so responses carry Vary: Origin.
	varies bool

	refusedHeaders api.Headers

	preflights, preflightsRefused, allowed, disallowed api.Counter
}

// Init indexes the origins and prebuilds header values.
func (c *Config) Init(env api.ConfigEnv) error {
	c.exact = map[string]struct{}{}
	for _, s := range c.AllowOrigins {
		if s == "*" {
			c.anyOrigin = true
			continue
		}
		o, _ := parseOrigin(s) // checked by Validate
		if o.exact != "" {
			c.exact[o.exact] = struct{}{}
		} else {
			c.wildcards = append(c.wildcards, o)
		}
	}
	for _, re := range c.AllowOriginRegexes {
		c.regexes = append(c.regexes, regexp.MustCompile(anchor(re)))
	}
	c.methods = map[string]struct{}{}
	for _, m := range c.AllowMethods {
		if m == "*" {
			c.anyMethod = true
		}
		c.methods[m] = struct{}{}
	}
	c.methodsValue = strings.Join(c.AllowMethods, ", ")
	c.headers = map[string]struct{}{}
	var names []string
	for _, h := range c.AllowHeaders {
		if h == "*" {
			c.anyHeader = true
			continue
		}
		h = strings.ToLower(h)
		c.headers[h] = struct{}{}
		names = append(names, h)
	}
	c.headersValue = strings.Join(names, ", ")
	c.exposeValue = strings.Join(c.ExposeHeaders, ", ")
	if c.MaxAge > 0 {
		c.maxAgeValue = strconv.Itoa(c.MaxAge)
	}
	c.varies = !c.anyOrigin || c.AllowCredentials
	c.refusedHeaders = api.Headers{"content-type": {"text/plain; charset=utf-8"}}
	m := env.Metrics()
	c.preflights = m.Counter("preflights")
	c.preflightsRefused = m.Counter("preflights_refused")
	c.allowed = m.Counter("allowed")
	c.disallowed = m.Counter("disallowed")
	return nil
}

// allowOrigins: a browser sends exactly one Origin; a request with several
// is not allowed.
func (c *compiled) allowOrigins(origins []string) (string, bool) {
	if len(origins) != 1 {
		return "", false
	}
	return c.allowOrigin(origins[0])
}

// allowOrigin says whether origin may read responses and what
// Access-Control-Allow-Origin then says: "*" for a wildcard policy without
// credentials, the origin itself otherwise.
func (c *compiled) allowOrigin(o string) (string, bool) {
	if c.anyOrigin { // never with credentials (Validate)
		return "*", true
	}
	lower := strings.ToLower(o) // no allocation for the usual lower-case origin
	if _, ok := c.exact[lower]; ok {
		return o, true
	}
	for i := range c.wildcards {
		if c.wildcards[i].matches(lower) {
			return o, true
		}
	}
	for _, re := range c.regexes {
		if re.MatchString(lower) {
			return o, true
		}
	}
	return "", false
}

// matches: "scheme://<labels><suffix>" with at least one label before it.
func (w *origin) matches(o string) bool {
	rest, ok := strings.CutPrefix(o, w.scheme)
	if !ok {
		return false
	}
	sub, ok := strings.CutSuffix(rest, w.suffix)
	return ok && validLabels(sub)
}

// methodAllowed follows Fetch's check of a preflight's answer: the
// CORS-safelisted methods need no listing.
func (c *compiled) methodAllowed(m string) bool {
	switch m {
	case "GET", "HEAD", "POST":
		return true
	}
	if c.anyMethod {
		return true
	}
	_, ok := c.methods[m]
	return ok
}
