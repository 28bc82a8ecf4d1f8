package filtermanager_test

import (
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

func TestContextSharesConsumerStateAndVariablesAcrossPlugins(t *testing.T) {
	logMark := fakeenvoy.MarkLogs()
	auth := plugin(t, api.Needs{}, recvF{func(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		ctx.SetConsumer(&api.Consumer{Name: "alice", Group: "gold"})
		ctx.SetState("auth.method", "key")
		ctx.Log().Infof("authenticated %s", "alice")
		return api.Continue
	}})
	var got []string
	later := plugin(t, api.Needs{MayBlock: api.BlockReceive}, fullF{
		recvF{func(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
			m, _ := ctx.GetState("auth.method")
			v, _ := ctx.Var("$consumer")
			got = append(got, ctx.Consumer().Name, m.(string), v, ctx.RequestID(), ctx.Receiver().RequestInfo().DownstreamRemoteAddress())
			return api.Continue
		}},
		sendF{func(ctx api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
			req := ctx.Sender().GetRequestHeaders()
			v, _ := req.Get("x-request-id")
			got = append(got, "send:"+v)
			if err := req.Set("x", "y"); err == nil {
				t.Error("request headers writable on the response path")
			}
			return api.Continue
		}},
		logF{func(ctx api.Context, req api.RequestHeaderMap, resp api.ResponseHeaderMap, info api.RequestInfo) {
			s, _ := ctx.Var("$status")
			got = append(got, "log:"+s+":"+req.Path()+":"+ctx.Consumer().Group)
		}},
		destroyF{func() {}},
	})
	res := do(t, mustChain(t, auth, later), fakeenvoy.Request{Path: "/p", Headers: [][2]string{{"x-request-id", "rid-7"}}})
	if res.Status != 200 {
		t.Fatal(res.Status)
	}
	want := "alice key alice rid-7 10.0.0.1:12345 send:rid-7 log:200:/p:gold"
	if strings.Join(got, " ") != want {
		t.Errorf("got  %q\nwant %q", strings.Join(got, " "), want)
	}
	if lines := fakeenvoy.LogsSince(logMark, "[moe]["+auth+"][rid-7] authenticated alice"); len(lines) != 1 {
		t.Errorf("tagged log line not found: %v", fakeenvoy.LogsSince(logMark, auth))
	}
}
