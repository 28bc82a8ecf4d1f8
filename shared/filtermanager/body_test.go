package filtermanager_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// headerOnly records what it was given.
func headerOnly(tag string, seen *[]string) recvF {
	return recvF{func(_ api.Context, h api.RequestHeaderMap, b api.Buffer, _ api.HeaderMap) api.Status {
		*seen = append(*seen, tag+":"+map[bool]string{true: "body", false: "nobody"}[b != nil])
		appendHeader(h, "x-trace", tag)
		return api.Continue
	}}
}

func TestWholeBodyPluginGetsBodyOnceAndMayRewriteIt(t *testing.T) {
	for _, block := range []api.Blocking{0, api.BlockReceive} {
		var seen []string
		a := plugin(t, api.Needs{}, headerOnly("a", &seen))
		body := plugin(t, api.Needs{RequestBody: api.WholeBody, MayBlock: block}, recvF{func(ctx api.Context, h api.RequestHeaderMap, b api.Buffer, _ api.HeaderMap) api.Status {
			seen = append(seen, "body:"+b.String())
			appendHeader(h, "x-trace", "body") // headers are still writable with the body
			b.Set([]byte(strings.ToUpper(b.String())))
			return api.Continue
		}})
		c := plugin(t, api.Needs{}, headerOnly("c", &seen))
		res := do(t, mustChain(t, a, body, c), fakeenvoy.Request{Method: "POST", Body: []string{"he", "llo", " world"}})
		if got := strings.Join(seen, " "); got != "a:nobody body:hello world c:body" {
			t.Errorf("block=%v: calls %q", block, got)
		}
		if res.Upstream.Body != "HELLO WORLD" {
			t.Errorf("upstream body %q", res.Upstream.Body)
		}
		if res.Upstream.Headers["x-trace"][0] != "a,body,c" {
			t.Errorf("upstream x-trace %q", res.Upstream.Headers["x-trace"])
		}
		if res.BodyCopies != 1 || res.BodyWrites != 1 {
			t.Errorf("body copies %d writes %d, want 1 and 1", res.BodyCopies, res.BodyWrites)
		}
	}
}

func TestHeadersOnlyChainDoesNotBufferOrTouchTheBody(t *testing.T) {
	var seen []string
	a := plugin(t, api.Needs{}, headerOnly("a", &seen))
	res := do(t, mustChain(t, a), fakeenvoy.Request{Method: "POST", Body: []string{"x", "y"}})
	for _, s := range res.Statuses {
		if strings.Contains(s, "StopAndBuffer") {
			t.Errorf("buffered: %v", res.Statuses)
		}
	}
	if res.Upstream.Body != "xy" || res.BodyCopies != 0 {
		t.Errorf("body %q copies %d", res.Upstream.Body, res.BodyCopies)
	}
}

// With trailers, Envoy forwards the body before Go sees the trailers, so a
// whole-body plugin runs on the body (which it may change) without trailers.
func TestWholeBodyWithTrailersRunsOnTheBody(t *testing.T) {
	var gotBody string
	var gotTrailers api.HeaderMap
	p := plugin(t, api.Needs{RequestBody: api.WholeBody}, recvF{func(_ api.Context, _ api.RequestHeaderMap, b api.Buffer, tr api.HeaderMap) api.Status {
		gotBody, gotTrailers = b.String(), tr
		b.AppendString("!")
		return api.Continue
	}})
	res := do(t, mustChain(t, p), fakeenvoy.Request{Method: "POST", Body: []string{"ab", "c"}, Trailers: [][2]string{{"x-checksum", "42"}}})
	if gotBody != "abc" || gotTrailers != nil {
		t.Errorf("plugin saw body %q trailers %v", gotBody, gotTrailers)
	}
	if res.Upstream.Body != "abc!" || res.Upstream.Trailers["x-checksum"][0] != "42" {
		t.Errorf("upstream body %q trailers %v", res.Upstream.Body, res.Upstream.Trailers)
	}
}

func TestStreamingPluginSeesTrailersOnTheLastChunk(t *testing.T) {
	var last string
	p := plugin(t, api.Needs{RequestBody: api.StreamingBody}, dataF{
		recvF{func(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status { return api.Continue }},
		func(ctx api.Context, c api.Buffer, end bool) api.Status {
			if end {
				tr := ctx.Receiver().GetRequestTrailers()
				v, _ := tr.Get("x-checksum")
				last = c.String() + "|" + v
				tr.Set("x-seen", "1")
			}
			return api.Continue
		},
	})
	res := do(t, mustChain(t, p), fakeenvoy.Request{Method: "POST", Body: []string{"ab"}, Trailers: [][2]string{{"x-checksum", "42"}}})
	if last != "|42" || res.Upstream.Trailers["x-seen"][0] != "1" || res.Upstream.Body != "ab" {
		t.Errorf("last %q upstream %+v", last, res.Upstream)
	}
}

func TestBodyOverLimitIs413(t *testing.T) {
	called := false
	p := plugin(t, api.Needs{RequestBody: api.WholeBody, MaxRequestBody: 4}, recvF{func(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status {
		called = true
		return api.Continue
	}})
	for _, withLength := range []bool{true, false} {
		req := fakeenvoy.Request{Method: "POST", Body: []string{"12345"}}
		if withLength {
			req.Headers = [][2]string{{"content-length", "5"}}
		}
		res := do(t, mustChain(t, p), req)
		if res.Status != 413 || called {
			t.Errorf("content-length=%v: status %d, plugin called %v", withLength, res.Status, called)
		}
	}
}

func TestResponseBodyOverLimitIs500(t *testing.T) {
	p := plugin(t, api.Needs{ResponseBody: api.WholeBody, MaxResponseBody: 2}, sendF{func(api.Context, api.ResponseHeaderMap, api.Buffer, api.HeaderMap) api.Status {
		return api.Continue
	}})
	res := do(t, mustChain(t, p), fakeenvoy.Request{Upstream: func(*fakeenvoy.Upstream) fakeenvoy.Response {
		return fakeenvoy.Response{Status: 200, Body: []string{"too", "big"}}
	}})
	if res.Status != 500 {
		t.Errorf("status %d", res.Status)
	}
}

func TestWholeResponseBodyRewrite(t *testing.T) {
	for _, block := range []api.Blocking{0, api.BlockSend} {
		p := plugin(t, api.Needs{ResponseBody: api.WholeBody, MayBlock: block}, sendF{func(_ api.Context, h api.ResponseHeaderMap, b api.Buffer, _ api.HeaderMap) api.Status {
			h.Set("x-len", b.String())
			b.SetString("[" + b.String() + "]")
			return api.Continue
		}})
		res := do(t, mustChain(t, p), fakeenvoy.Request{Upstream: func(*fakeenvoy.Upstream) fakeenvoy.Response {
			return fakeenvoy.Response{Status: 201, Body: []string{"a", "b"}}
		}})
		if res.Status != 201 || res.Body != "[ab]" || res.Headers["x-len"][0] != "ab" {
			t.Errorf("block=%v: got %d %q %v", block, res.Status, res.Body, res.Headers)
		}
	}
}

func TestStreamingPluginSeesEachChunk(t *testing.T) {
	for _, block := range []api.Blocking{0, api.BlockReceive} {
		testStreaming(t, block)
	}
}

func testStreaming(t *testing.T, block api.Blocking) {
	var chunks []string
	p := plugin(t, api.Needs{RequestBody: api.StreamingBody, MayBlock: block}, dataF{
		recvF{func(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status { return api.Continue }},
		func(_ api.Context, c api.Buffer, end bool) api.Status {
			chunks = append(chunks, c.String()+map[bool]string{true: "$", false: ""}[end])
			c.SetString(strings.ToUpper(c.String()))
			return api.Continue
		},
	})
	res := do(t, mustChain(t, p), fakeenvoy.Request{Method: "POST", Body: []string{"a", "b", "c"}})
	if strings.Join(chunks, ",") != "a,b,c$" || res.Upstream.Body != "ABC" {
		t.Errorf("block=%v: chunks %q upstream %q", block, chunks, res.Upstream.Body)
	}
}

func TestStreamingPluginSeesWholeBodyWhenAnotherPluginBuffers(t *testing.T) {
	var seen []string
	stream := plugin(t, api.Needs{RequestBody: api.StreamingBody}, dataF{
		recvF{func(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status {
			seen = append(seen, "stream:headers")
			return api.Continue
		}},
		func(_ api.Context, c api.Buffer, end bool) api.Status {
			seen = append(seen, fmt.Sprintf("stream:%s:%v", c.String(), end))
			c.AppendString("+s")
			return api.Continue
		},
	})
	whole := plugin(t, api.Needs{RequestBody: api.WholeBody, MayBlock: api.BlockReceive}, recvF{func(_ api.Context, _ api.RequestHeaderMap, b api.Buffer, _ api.HeaderMap) api.Status {
		seen = append(seen, "whole:"+b.String())
		return api.Continue
	}})
	res := do(t, mustChain(t, stream, whole), fakeenvoy.Request{Method: "POST", Body: []string{"a", "b"}})
	if got := strings.Join(seen, " "); got != "stream:headers stream:ab:true whole:ab+s" {
		t.Errorf("calls %q", got)
	}
	if res.Upstream.Body != "ab+s" {
		t.Errorf("upstream %q", res.Upstream.Body)
	}
}

// A request with trailers and no data (Envoy hands the trailers over without a
// data call) runs the whole-body pass without a body: a streaming plugin gets
// an empty last chunk, and every whole-body plugin, before or after it, gets
// no body (nil, and GetRequestData agrees), whether or not a plugin may block.
func TestTrailersOnlyRequestGivesWholeBodyPluginsNoBody(t *testing.T) {
	for _, block := range []api.Blocking{0, api.BlockReceive} {
		var seen []string
		whole := func(tag string) recvF {
			return recvF{func(ctx api.Context, _ api.RequestHeaderMap, b api.Buffer, tr api.HeaderMap) api.Status {
				got := ctx.Receiver().GetRequestData()
				v, _ := tr.Get("x-t")
				seen = append(seen, fmt.Sprintf("%s:body=%v,same=%v,trailer=%s", tag, b != nil, (b == nil) == (got == nil), v))
				return api.Continue
			}}
		}
		before := plugin(t, api.Needs{RequestBody: api.WholeBody}, whole("before"))
		streaming := plugin(t, api.Needs{RequestBody: api.StreamingBody}, dataF{
			recvF: recvF{func(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status { return api.Continue }},
			data: func(_ api.Context, chunk api.Buffer, end bool) api.Status {
				seen = append(seen, fmt.Sprintf("chunk:%d,end=%v", chunk.Len(), end))
				return api.Continue
			},
		})
		after := plugin(t, api.Needs{RequestBody: api.WholeBody, MayBlock: block}, whole("after"))
		do(t, mustChain(t, before, streaming, after), fakeenvoy.Request{Method: "POST", Trailers: [][2]string{{"x-t", "1"}}})
		want := "before:body=false,same=true,trailer=1 chunk:0,end=true after:body=false,same=true,trailer=1"
		if got := strings.Join(seen, " "); got != want {
			t.Errorf("block=%v: %s\nwant %s", block, got, want)
		}
	}
}

// A chain whose plugins see no body keeps a request's trailers and body out of
// its stream until something needs them: trailers that arrive, a handler call,
// the access log. What plugins see is the same either way.
func TestHeaderOnlyChainSeesTrailersAndBodyWhenAsked(t *testing.T) {
	var seen []string
	p := plugin(t, api.Needs{}, struct {
		recvF
		logF
	}{
		recvF{func(ctx api.Context, _ api.RequestHeaderMap, b api.Buffer, tr api.HeaderMap) api.Status {
			r := ctx.Receiver()
			seen = append(seen,
				fmt.Sprintf("args body=%t trailers=%t", b != nil, tr != nil),
				fmt.Sprintf("get body=%t trailers=%t", r.GetRequestData() != nil, r.GetRequestTrailers() != nil),
				fmt.Sprintf("set body unavailable=%t", errors.Is(r.SetRequestData(nil), api.ErrUnavailable)),
				fmt.Sprintf("set trailers unavailable=%t", errors.Is(r.SetRequestTrailers(nil), api.ErrUnavailable)))
			return api.Continue
		}},
		logF{func(ctx api.Context, _ api.RequestHeaderMap, _ api.ResponseHeaderMap, _ api.RequestInfo) {
			v := "none"
			if tr := ctx.Receiver().GetRequestTrailers(); tr != nil {
				v, _ = tr.Get("x-checksum")
			}
			seen = append(seen, "log trailers="+v)
		}},
	})
	res := do(t, mustChain(t, p), fakeenvoy.Request{Method: "POST", Body: []string{"ab"}, Trailers: [][2]string{{"x-checksum", "42"}}})
	want := "args body=false trailers=false|get body=false trailers=false|set body unavailable=true|set trailers unavailable=true|log trailers=42"
	if got := strings.Join(seen, "|"); got != want {
		t.Errorf("plugin saw\n %s\nwant\n %s", got, want)
	}
	if res.Upstream.Body != "ab" || res.Upstream.Trailers["x-checksum"][0] != "42" {
		t.Errorf("upstream body %q trailers %v", res.Upstream.Body, res.Upstream.Trailers)
	}
}
