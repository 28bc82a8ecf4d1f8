package cors

import (
	"fmt"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

const appConfig = `{
	"allow_origins": ["https://app.example.com", "https://*.example.org", "http://localhost:3000", "null"],
	"allow_origin_regexes": ["https://[a-z]+\\.partner\\.test"],
	"allow_methods": ["GET", "POST", "PUT", "patch"],
	"allow_headers": ["Content-Type", "authorization", "x-request-id"],
	"expose_headers": ["x-upstream", "x-total"],
	"allow_credentials": true,
	"max_age": 600
}`

func TestOriginsAreMatchedExactlyByWildcardOrRegex(t *testing.T) {
	c, _ := parse(t, appConfig)
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"https://app.example.com", true},
		{"HTTPS://APP.EXAMPLE.COM", true}, // scheme and host are case-insensitive
		{"http://app.example.com", false}, // other scheme
		{"https://app.example.com:8443", false},
		{"https://app.example.com.evil.test", false},
		{"https://evilapp.example.com", false},
		{"https://a.example.org", true},
		{"https://a.b.example.org", true},
		{"https://example.org", false}, // the apex is not a subdomain
		{"https://-.x.example.org.evil", false},
		{"https://a..example.org", false},
		{"https://a/b.example.org", false},
		{"https://a.example.org:444", false},
		{"http://localhost:3000", true},
		{"http://localhost:3001", false},
		{"null", true},
		{"https://shop.partner.test", true},
		{"https://shop.partner.test.evil.test", false}, // regexes are anchored
		{"https://x-y.partner.test", false},
		{"", false},
	} {
		_, ok := c.allowOrigin(tc.origin)
		if ok != tc.ok {
			t.Errorf("%q: allowed %v, want %v", tc.origin, ok, tc.ok)
		}
	}
	wild, _ := parse(t, `{"allow_origins": ["https://*.example.com:8443"]}`)
	for o, want := range map[string]bool{"https://a.example.com:8443": true, "https://a.example.com": false, "https://example.com:8443": false} {
		if _, ok := wild.allowOrigin(o); ok != want {
			t.Errorf("port pattern, %q: %v, want %v", o, ok, want)
		}
	}
}

func TestPreflights(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		req          *fakeframework.Request
		status       int
		want         map[string]string // reply headers ("" = must be absent)
		body         string
	}{
		{"allowed, with credentials", appConfig, preflight("https://app.example.com", "PUT", "content-type,x-request-id"), 204, map[string]string{
			hAllowOrigin: "https://app.example.com", hAllowCredentials: "true", hAllowMethods: "GET, POST, PUT, patch",
			hAllowHeaders: "content-type, authorization, x-request-id", hMaxAge: "600", hVary: "Origin, Access-Control-Request-Method, Access-Control-Request-Headers",
			hExposeHeaders: "",
		}, ""},
		{"a method not listed", appConfig, preflight("https://a.b.example.org", "DELETE", ""), 403, nil, "CORS preflight refused: method not allowed\n"},
		{"the origin is echoed as sent", appConfig, preflight("HTTPS://A.B.EXAMPLE.ORG", "PUT", ""), 204, map[string]string{hAllowOrigin: "HTTPS://A.B.EXAMPLE.ORG"}, ""},
		{"a safelisted method needs no listing", `{"allow_origins": ["https://a.test"], "allow_methods": ["PUT"], "allow_headers": ["x-a"]}`,
			preflight("https://a.test", "GET", "x-a"), 204, map[string]string{hAllowOrigin: "https://a.test", hAllowMethods: "PUT", hAllowCredentials: "", hMaxAge: ""}, ""},
		{"methods are case-sensitive (Fetch)", appConfig, preflight("https://app.example.com", "PATCH", ""), 403, nil, "CORS preflight refused: method not allowed\n"},
		{"lower-case patch as listed", appConfig, preflight("https://app.example.com", "patch", ""), 204, map[string]string{hAllowOrigin: "https://app.example.com"}, ""},
		{"origin not allowed: no CORS headers", appConfig, preflight("https://evil.test", "PUT", ""), 403, map[string]string{hAllowOrigin: "", hAllowMethods: "", hAllowCredentials: "", hVary: ""}, "CORS preflight refused: origin not allowed\n"},
		{"header not allowed", appConfig, preflight("https://app.example.com", "PUT", "content-type,x-secret"), 403, map[string]string{hAllowOrigin: ""}, "CORS preflight refused: request header \"x-secret\" not allowed\n"},
		{"header names are case-insensitive, spaces ignored", appConfig, preflight("https://app.example.com", "POST", " Authorization , CONTENT-TYPE"), 204, map[string]string{hAllowOrigin: "https://app.example.com"}, ""},
		{"a garbage header name is not echoed", appConfig, preflight("https://app.example.com", "POST", "x<script>"), 403, nil, "CORS preflight refused: request header (invalid name) not allowed\n"},
		{"wildcard origin without credentials", `{"allow_origins": ["*"]}`, preflight("https://anyone.test", "POST", ""), 204, map[string]string{hAllowOrigin: "*", hAllowMethods: "GET, HEAD, POST", hAllowHeaders: ""}, ""},
		{"any method and header: the asked ones are echoed (Authorization too)", `{"allow_origins": ["https://a.test"], "allow_methods": ["*"], "allow_headers": ["*"], "allow_credentials": true}`,
			preflight("https://a.test", "PROPFIND", "authorization,x-anything"), 204, map[string]string{hAllowMethods: "PROPFIND", hAllowHeaders: "authorization,x-anything", hAllowCredentials: "true"}, ""},
		{"preflight status 200", `{"allow_origins": ["https://a.test"], "preflight_status": 200}`, preflight("https://a.test", "POST", ""), 200, map[string]string{hAllowOrigin: "https://a.test"}, ""},
		{"refused status", `{"allow_origins": ["https://a.test"], "refused_status": 400}`, preflight("https://b.test", "POST", ""), 400, nil, "CORS preflight refused: origin not allowed\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, env := parse(t, tc.config)
			ctx, st := fakeframework.Run(Name, (*filter)(c), tc.req, nil)
			if st != api.Stop || ctx.Replied == nil || ctx.Replied.Code != tc.status || ctx.Replied.Body != tc.body {
				t.Fatalf("status %v reply %+v, want %d %q", st, ctx.Replied, tc.status, tc.body)
			}
			for k, v := range tc.want {
				if got := ctx.Replied.Header(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if tc.status == 403 || tc.status == 400 {
				ctx.Replied.Headers.Range(func(k, _ string) bool {
					if len(k) > 15 && k[:15] == "access-control-" {
						t.Errorf("refused preflight carries %s", k)
					}
					return true
				})
				if env.Count("preflights_refused") != 1 {
					t.Errorf("preflights_refused = %d", env.Count("preflights_refused"))
				}
			} else if env.Count("preflights") != 1 {
				t.Errorf("preflights = %d", env.Count("preflights"))
			}
		})
	}
}

func TestNotPreflightsGoOn(t *testing.T) {
	c, _ := parse(t, appConfig)
	for _, req := range []*fakeframework.Request{
		fakeframework.NewRequest("GET", "/", "origin", "https://app.example.com"),
		fakeframework.NewRequest("OPTIONS", "/", "origin", "https://app.example.com"),                      // no Access-Control-Request-Method
		fakeframework.NewRequest("OPTIONS", "/", "access-control-request-method", "PUT"),                   // no Origin
		fakeframework.NewRequest("POST", "/", "origin", "https://evil.test", "content-type", "text/plain"), // a simple request: the server runs it
	} {
		if ctx, st := fakeframework.Run(Name, (*filter)(c), req, nil); st != api.Continue || ctx.Replied != nil {
			t.Errorf("%v: %v %+v", req.Headers, st, ctx.Replied)
		}
	}
}

func TestResponseHeaders(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		req          *fakeframework.Request
		upstream     []string // response headers from the upstream
		want         map[string]string
		vary         []string
		metric       string
	}{
		{"allowed origin", appConfig, fakeframework.NewRequest("GET", "/", "origin", "https://app.example.com"), nil,
			map[string]string{hAllowOrigin: "https://app.example.com", hAllowCredentials: "true", hExposeHeaders: "x-upstream, x-total"}, []string{"Origin"}, "allowed"},
		{"disallowed origin: the upstream's CORS headers are removed", appConfig,
			fakeframework.NewRequest("GET", "/", "origin", "https://evil.test"),
			[]string{hAllowOrigin, "*", hAllowCredentials, "true", hExposeHeaders, "x-secret", "vary", "Accept-Encoding"},
			map[string]string{hAllowOrigin: "", hAllowCredentials: "", hExposeHeaders: ""}, []string{"Accept-Encoding", "Origin"}, "disallowed"},
		{"allowed origin: the upstream's values are replaced", `{"allow_origins": ["https://a.test"]}`,
			fakeframework.NewRequest("GET", "/", "origin", "https://a.test"),
			[]string{hAllowOrigin, "*", hAllowCredentials, "true", hExposeHeaders, "x-secret", "vary", "origin"},
			map[string]string{hAllowOrigin: "https://a.test", hAllowCredentials: "", hExposeHeaders: ""}, []string{"origin"}, "allowed"},
		{"two Origin headers: not allowed", appConfig, fakeframework.NewRequest("GET", "/", "origin", "https://app.example.com", "origin", "https://evil.test"), nil,
			map[string]string{hAllowOrigin: ""}, []string{"Origin"}, "disallowed"},
		{"no Origin: only Vary", appConfig, fakeframework.NewRequest("GET", "/"), nil,
			map[string]string{hAllowOrigin: ""}, []string{"Origin"}, ""},
		{"wildcard policy: no Vary", `{"allow_origins": ["*"], "expose_headers": ["*"]}`,
			fakeframework.NewRequest("GET", "/", "origin", "https://x.test"), nil,
			map[string]string{hAllowOrigin: "*", hExposeHeaders: "*", hAllowCredentials: ""}, nil, "allowed"},
		{"Vary: * stays", appConfig, fakeframework.NewRequest("GET", "/", "origin", "https://app.example.com"), []string{"vary", "*"},
			map[string]string{hAllowOrigin: "https://app.example.com"}, []string{"*"}, "allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, env := parse(t, tc.config)
			resp := fakeframework.NewResponse(200, tc.upstream...)
			if _, st := fakeframework.RunSend(Name, (*filter)(c), tc.req, resp, nil); st != api.Continue {
				t.Fatalf("status %v", st)
			}
			for k, v := range tc.want {
				if got, _ := resp.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if got := resp.Values("vary"); fmt.Sprint(got) != fmt.Sprint(tc.vary) && !(len(got) == 0 && len(tc.vary) == 0) {
				t.Errorf("vary %q, want %q", got, tc.vary)
			}
			for _, m := range []string{"allowed", "disallowed"} {
				want := uint64(0)
				if m == tc.metric {
					want = 1
				}
				if env.Count(m) != want {
					t.Errorf("%s = %d, want %d", m, env.Count(m), want)
				}
			}
		})
	}
}

// The preflight this plugin answered passes its own Append untouched.
func TestOwnPreflightReplyIsLeftAlone(t *testing.T) {
	c, env := parse(t, appConfig)
	req := preflight("https://app.example.com", "PUT", "")
	ctx := fakeframework.NewContext(Name, req)
	if st := (*filter)(c).OnReceive(ctx, req, nil, nil); st != api.Stop {
		t.Fatal(st)
	}
	resp := fakeframework.NewResponse(204)
	ctx.WithResponse(resp)
	(*filter)(c).Append(ctx, resp, nil, nil)
	if resp.Len() != 1 || env.Count("allowed") != 0 {
		t.Fatalf("Append changed the preflight reply: %v", resp.Headers)
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ config, field, reason string }{
		{`{}`, "allow_origins", "is required"},
		{`{"allow_origins": ["*"], "allow_credentials": true}`, "allow_origins[0]", "cannot be combined with allow_credentials"},
		{`{"allow_origins": ["https://a.test/"]}`, "allow_origins[0]", "an origin has no path"},
		{`{"allow_origins": ["a.test"]}`, "allow_origins[0]", "want scheme://host[:port]"},
		{`{"allow_origins": ["https://a.*.test"]}`, "allow_origins[0]", "a wildcard is allowed only as the first label"},
		{`{"allow_origins": ["https://*"]}`, "allow_origins[0]", "invalid host"},
		{`{"allow_origins": ["https://a.test:0"]}`, "allow_origins[0]", "invalid port"},
		{`{"allow_origins": ["https://a.test:99999"]}`, "allow_origins[0]", "invalid port"},
		{`{"allow_origins": ["https://user@a.test"]}`, "allow_origins[0]", "is not an origin"},
		{`{"allow_origin_regexes": ["https://(a"]}`, "allow_origin_regexes[0]", "missing closing )"},
		{`{"allow_origins": ["*"], "allow_methods": []}`, "allow_methods", "at least one method"},
		{`{"allow_origins": ["*"], "allow_methods": ["GET POST"]}`, "allow_methods[0]", "is not a method"},
		{`{"allow_origins": ["*"], "allow_headers": ["x a"]}`, "allow_headers[0]", "not a valid header name"},
		{`{"allow_origins": ["https://a.test"], "expose_headers": ["*"], "allow_credentials": true}`, "expose_headers[0]", "literal header name"},
		{`{"allow_origins": ["*"], "max_age": 100000}`, "max_age", "between 0 and 86400"},
		{`{"allow_origins": ["*"], "preflight_status": 201}`, "preflight_status", "must be 200 or 204"},
		{`{"allow_origins": ["*"], "refused_status": 200}`, "refused_status", "4xx or 5xx"},
		{`{"allow_origin": ["*"]}`, "allow_origin", "unknown field"},
	} {
		t.Run(tc.field+" "+tc.reason, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
		})
	}
}
