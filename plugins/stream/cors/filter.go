package cors

import (
	"strings"

	"github.com/moeproxy/moe/shared/api"
)

// filter is the compiled config: stateless, shared by all requests.
type filter Config

const (
	hOrigin           = "origin"
	hRequestMethod    = "access-control-request-method"
	hRequestHeaders   = "access-control-request-headers"
	hAllowOrigin      = "access-control-allow-origin"
	hAllowCredentials = "access-control-allow-credentials"
	hAllowMethods     = "access-control-allow-methods"
	hAllowHeaders     = "access-control-allow-headers"
	hExposeHeaders    = "access-control-expose-headers"
	hMaxAge           = "access-control-max-age"
	hVary             = "vary"

	// stateAnswered marks a preflight this plugin answered, so its Append
	// leaves that reply alone. Not a string: it stays inside this filter.
	stateAnswered = "cors.preflight"
)

// answered is the GetState value of stateAnswered.
type answered struct{}

// OnReceive answers preflights; every other request goes on.
func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	if h.Method() != "OPTIONS" {
		return api.Continue
	}
	origins := h.Values(hOrigin)
	if len(origins) == 0 {
		return api.Continue
	}
	method, ok := h.Get(hRequestMethod)
	if !ok {
		return api.Continue // an OPTIONS request of the page itself, not a preflight
	}
	ctx.SetState(stateAnswered, answered{})
	allowOrigin, ok := f.allowOrigins(origins)
	if !ok {
		return f.refuse(ctx, "origin not allowed")
	}
	if !f.methodAllowed(method) {
		return f.refuse(ctx, "method not allowed")
	}
	requested := strings.Join(h.Values(hRequestHeaders), ",")
	if !f.anyHeader {
		for rest := requested; rest != ""; {
			var name string
			name, rest, _ = strings.Cut(rest, ",")
			name = strings.ToLower(strings.TrimSpace(name))
			if name == "" {
				continue
			}
			if _, ok := f.headers[name]; !ok {
				return f.refuse(ctx, "request header "+quoteName(name)+" not allowed")
			}
		}
	}
	reply := api.Headers{
		hAllowOrigin:  {allowOrigin},
		hAllowMethods: {f.methodsValue},
		hVary:         {"Origin, Access-Control-Request-Method, Access-Control-Request-Headers"},
	}
	if f.anyMethod {
		reply[hAllowMethods] = []string{method}
	}
	switch {
	case f.anyHeader && requested != "":
		reply[hAllowHeaders] = []string{requested}
	case f.headersValue != "":
		reply[hAllowHeaders] = []string{f.headersValue}
	}
	if f.AllowCredentials {
		reply[hAllowCredentials] = []string{"true"}
	}
	if f.maxAgeValue != "" {
		reply[hMaxAge] = []string{f.maxAgeValue}
	}
	f.preflights.Inc(1)
	return ctx.Reply(f.PreflightStatus, "", reply)
}

// refuse answers a preflight without any CORS header: the browser fails it.
func (f *filter) refuse(ctx api.Context, reason string) api.Status {
	f.preflightsRefused.Inc(1)
	return ctx.Reply(f.RefusedStatus, "CORS preflight refused: "+reason+"\n", f.refusedHeaders)
}

// quoteName quotes a header name for a reply body, or says "a header" for
// one that is too long or not a token (never echo arbitrary bytes).
func quoteName(n string) string {
	if len(n) > 64 || !api.ValidHeaderName(n) {
		return "(invalid name)"
	}
	return `"` + n + `"`
}

// Append adds the CORS headers to the answer of an allowed origin (local
// replies of later plugins too, so a page can read a 401 or 429), and
// removes the upstream's from the answer of any other origin.
func (f *filter) Append(ctx api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	req := ctx.Sender().GetRequestHeaders()
	if req == nil {
		return api.Continue
	}
	origins := req.Values(hOrigin)
	if len(origins) == 0 {
		// Not a CORS request; the same URL's answer to one would differ.
		if f.varies {
			addVary(h)
		}
		return api.Continue
	}
	if req.Method() == "OPTIONS" {
		if _, ok := ctx.GetState(stateAnswered); ok {
			return api.Continue // the preflight reply is complete
		}
	}
	if allowOrigin, ok := f.allowOrigins(origins); ok {
		f.allowed.Inc(1)
		_ = h.Set(hAllowOrigin, allowOrigin)
		if f.AllowCredentials {
			_ = h.Set(hAllowCredentials, "true")
		} else {
			del(h, hAllowCredentials)
		}
		if f.exposeValue != "" {
			_ = h.Set(hExposeHeaders, f.exposeValue)
		} else {
			del(h, hExposeHeaders)
		}
	} else {
		f.disallowed.Inc(1)
		del(h, hAllowOrigin)
		del(h, hAllowCredentials)
		del(h, hExposeHeaders)
	}
	if f.varies {
		addVary(h)
	}
	return api.Continue
}

// del removes a header the upstream may have set (no write when absent).
func del(h api.HeaderMap, k string) {
	if _, ok := h.Get(k); ok {
		_ = h.Del(k)
	}
}

// addVary adds Origin to Vary unless it is there already (or Vary is "*").
func addVary(h api.HeaderMap) {
	for _, v := range h.Values(hVary) {
		for rest := v; rest != ""; {
			var tok string
			tok, rest, _ = strings.Cut(rest, ",")
			tok = strings.TrimSpace(tok)
			if tok == "*" || strings.EqualFold(tok, "origin") {
				return
			}
		}
	}
	_ = h.Add(hVary, "Origin")
}
