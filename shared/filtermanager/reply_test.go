package filtermanager_test

import (
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

func TestHijackReplyStopsTheChainAndRunsSenders(t *testing.T) {
	for _, block := range []api.Blocking{0, api.BlockReceive} {
		var after bool
		deny := plugin(t, api.Needs{MayBlock: block}, recvF{func(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
			if err := ctx.Receiver().SendHijackReplyWithBody(403, api.NewHeaders("x-reason", "nope"), "denied"); err != nil {
				t.Errorf("reply: %v", err)
			}
			return api.Stop
		}})
		next := plugin(t, api.Needs{}, recvF{func(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status {
			after = true
			return api.Continue
		}})
		cors := plugin(t, api.Needs{}, sendF{func(_ api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
			h.Set("x-sender", "ran")
			return api.Continue
		}})
		res := do(t, mustChain(t, cors, deny, next), fakeenvoy.Request{})
		if res.Status != 403 || res.Body != "denied" || after || res.Upstream != nil {
			t.Errorf("block=%v: status %d body %q after=%v upstream=%v", block, res.Status, res.Body, after, res.Upstream)
		}
		if res.Headers["x-reason"][0] != "nope" || res.Headers["x-sender"][0] != "ran" {
			t.Errorf("headers %v", res.Headers)
		}
		if !strings.Contains(res.LocalReply.Details, deny) {
			t.Errorf("details %q", res.LocalReply.Details)
		}
	}
}

func TestStopWithoutReplyIs500NamingThePlugin(t *testing.T) {
	bad := plugin(t, api.Needs{}, recvF{func(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status {
		return api.Stop
	}})
	res := do(t, mustChain(t, bad), fakeenvoy.Request{})
	if res.Status != 500 || !strings.Contains(res.Body, bad) {
		t.Errorf("status %d body %q", res.Status, res.Body)
	}
}

func TestSenderCanReplaceTheResponse(t *testing.T) {
	p := plugin(t, api.Needs{}, sendF{func(ctx api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		if h.Status() == 502 {
			ctx.Sender().SendHijackReplyWithBody(503, nil, "try later")
			return api.Stop
		}
		return api.Continue
	}})
	res := do(t, mustChain(t, p), fakeenvoy.Request{Upstream: func(*fakeenvoy.Upstream) fakeenvoy.Response { return fakeenvoy.Response{Status: 502} }})
	if res.Status != 503 || res.Body != "try later" {
		t.Errorf("got %d %q", res.Status, res.Body)
	}
}

func TestDirectResponseUsesStatusHeader(t *testing.T) {
	p := plugin(t, api.Needs{}, recvF{func(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		ctx.Receiver().SendDirectResponse(api.NewHeaders(":status", "204", "x-direct", "1"), nil, nil)
		return api.Stop
	}})
	res := do(t, mustChain(t, p), fakeenvoy.Request{})
	if res.Status != 204 || res.Headers["x-direct"][0] != "1" {
		t.Errorf("got %d %v", res.Status, res.Headers)
	}
}

func TestSecondReplyInAPhaseIsRefused(t *testing.T) {
	var second error
	p := plugin(t, api.Needs{}, recvF{func(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		ctx.Receiver().SendHijackReply(401, nil)
		second = ctx.Receiver().SendHijackReply(402, nil)
		return api.Stop
	}})
	res := do(t, mustChain(t, p), fakeenvoy.Request{})
	if res.Status != 401 || second == nil {
		t.Errorf("status %d second reply err %v", res.Status, second)
	}
}

func TestUpstreamOverrideHostIsAfterChooseHost(t *testing.T) {
	p := plugin(t, api.Needs{}, recvF{func(ctx api.Context, _ api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
		if err := ctx.Receiver().SetUpstreamOverrideHost("10.1.2.3:8080", false); err != nil {
			t.Errorf("override: %v", err)
		}
		if err := ctx.Receiver().SetUpstreamOverrideHost("not-an-ip", false); err == nil {
			t.Errorf("bad host accepted")
		}
		return api.Continue
	}})
	res := do(t, mustChain(t, p), fakeenvoy.Request{})
	if res.Upstream.OverrideHost != "10.1.2.3:8080" {
		t.Errorf("override %q", res.Upstream.OverrideHost)
	}
}

func TestContextReplyAnswersFromTheRunningDirection(t *testing.T) {
	for _, async := range []bool{false, true} {
		var recvBlock, sendBlock api.Blocking
		if async {
			recvBlock, sendBlock = api.BlockReceive, api.BlockSend
		}
		deny := plugin(t, api.Needs{MayBlock: recvBlock}, recvF{func(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
			if v, _ := h.Get("x-deny"); v == "1" {
				return ctx.Reply(451, "unavailable", api.NewHeaders("x-reason", "legal"))
			}
			return api.Continue
		}})
		rewrite := plugin(t, api.Needs{MayBlock: sendBlock}, sendF{func(ctx api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
			if h.Status() == 502 {
				return ctx.Reply(503, "try later", nil)
			}
			return api.Continue
		}})
		cfg := mustChain(t, rewrite, deny)
		res := do(t, cfg, fakeenvoy.Request{Headers: [][2]string{{"x-deny", "1"}}})
		if res.Status != 451 || res.Body != "unavailable" || res.Upstream != nil || res.Headers["x-reason"][0] != "legal" {
			t.Errorf("async=%v request side: status %d body %q upstream %v headers %v", async, res.Status, res.Body, res.Upstream, res.Headers)
		}
		res = do(t, cfg, fakeenvoy.Request{Upstream: func(*fakeenvoy.Upstream) fakeenvoy.Response { return fakeenvoy.Response{Status: 502} }})
		if res.Status != 503 || res.Body != "try later" {
			t.Errorf("async=%v response side: status %d body %q", async, res.Status, res.Body)
		}
	}
}
