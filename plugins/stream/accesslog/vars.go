package accesslog

import (
	"strconv"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/variables"
)

// The variables access logs need beyond the framework's, named as in nginx
// where nginx has one. They are registered for every plugin (any template
// may use them).
func init() {
	// $time_iso8601: when the request started, UTC, with milliseconds.
	variables.Register("time_iso8601", func(ctx api.Context) (string, bool) {
		t := ctx.Receiver().RequestInfo().StartTime()
		if t.IsZero() {
			return "", false
		}
		return t.UTC().Format("2006-01-02T15:04:05.000Z07:00"), true
	})
	// $msec: the time now (the log time), in seconds with millisecond resolution.
	variables.Register("msec", func(api.Context) (string, bool) {
		ms := time.Now().UnixMilli()
		return strconv.FormatInt(ms/1000, 10) + "." + pad3(ms%1000), true
	})
	// $upstream_addr: the upstream host the request went to ("ip:port").
	variables.Register("upstream_addr", func(ctx api.Context) (string, bool) {
		a := ctx.Receiver().RequestInfo().UpstreamHost()
		return a, a != ""
	})
	// $server_protocol: HTTP/1.0, HTTP/1.1, HTTP/2, HTTP/3.
	variables.Register("server_protocol", func(ctx api.Context) (string, bool) {
		p := ctx.Receiver().RequestInfo().Protocol()
		return p, p != ""
	})
	// $response_code_details: Envoy's reason for the response
	// (via_upstream, route_not_found, moe_reply{key-auth}, ...).
	variables.Register("response_code_details", func(ctx api.Context) (string, bool) {
		d, err := ctx.Receiver().RequestInfo().GetProperty("response.code_details")
		return d, err == nil && d != ""
	})
	defaultFormat = variables.MustCompileTemplate(DefaultFormat)
}

func pad3(n int64) string {
	s := strconv.FormatInt(n, 10)
	for len(s) < 3 {
		s = "0" + s
	}
	return s
}
