package payloadlimit

import (
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Size
		err  string
	}{
		{`1024`, 1024, ""},
		{`1.048576e+06`, 1 << 20, ""}, // a protobuf Struct number
		{`"512"`, 512, ""},
		{`"512k"`, 512 << 10, ""},
		{`"10m"`, 10 << 20, ""},
		{`"10MiB"`, 10 << 20, ""},
		{`"10MB"`, 10 << 20, ""},
		{`"10 mb"`, 10 << 20, ""},
		{`"1g"`, 1 << 30, ""},
		{`"1.5k"`, 1536, ""},
		{`"0"`, 0, ""},
		{`"10x"`, 0, "invalid size"},
		{`"k"`, 0, "invalid size"},
		{`"0.3"`, 0, "not a whole number"},
		{`-1`, 0, "between 0 and"},
		{`1.5`, 0, "not a whole number"},
		{`true`, 0, "expected a size"},
		{`"1e3k"`, 0, "invalid size"},
	} {
		var s Size
		err := s.UnmarshalJSON([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || s != tc.want {
			t.Errorf("%s: %d %v, want %d", tc.in, s, err, tc.want)
		}
	}
	if got := Size(10 << 20).String(); got != "10m" {
		t.Errorf("String = %q", got)
	}
}

func TestRequestContentLength(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		length       string // "" = no content-length
		want         api.Status
		status       int
		body         string
	}{
		{"under the limit", `{"max_request_body": "1k"}`, "1000", api.Continue, 0, ""},
		{"at the limit", `{"max_request_body": "1k"}`, "1024", api.Continue, 0, ""},
		{"over the limit", `{"max_request_body": "1k"}`, "1025", api.Stop, 413, "Payload Too Large"},
		{"configured reply", `{"max_request_body": 10, "status": 400, "body": "too big"}`, "11", api.Stop, 400, "too big"},
		{"no content-length: counted later", `{"max_request_body": 10}`, "", api.Continue, 0, ""},
		{"unparsable content-length: counted later", `{"max_request_body": 10}`, "x", api.Continue, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, env := parse(t, tc.config)
			var kv []string
			if tc.length != "" {
				kv = []string{"content-length", tc.length}
			}
			f := newFilter(c).(*reqFilter)
			ctx, st := fakeframework.Run(Name, f, fakeframework.NewRequest("POST", "/", kv...), nil)
			if st != tc.want {
				t.Fatalf("status %v, want %v (%+v)", st, tc.want, ctx.Replied)
			}
			if tc.want == api.Stop {
				if ctx.Replied.Code != tc.status || ctx.Replied.Body != tc.body || env.Count("request_too_large") != 1 || env.Count("request_too_large_streamed") != 0 {
					t.Fatalf("reply %+v metrics %v", ctx.Replied, env.Values())
				}
			}
		})
	}
}

// A chunked body is counted chunk by chunk and refused by the chunk that
// passes the limit, not earlier.
func TestRequestStreamedCount(t *testing.T) {
	for _, tc := range []struct {
		name      string
		chunks    []int
		refusedAt int // index of the refusing chunk, -1 = none
	}{
		{"under", []int{3, 3, 3}, -1},
		{"exactly the limit", []int{5, 5}, -1},
		{"one byte over", []int{5, 5, 1}, 2},
		{"first chunk over", []int{11}, 0},
		{"empty chunks", []int{0, 10, 0}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, env := parse(t, `{"max_request_body": 10}`)
			f := newFilter(c).(*reqFilter)
			req := fakeframework.NewRequest("POST", "/")
			ctx := fakeframework.NewContext(Name, req)
			if st := f.OnReceive(ctx, req, nil, nil); st != api.Continue {
				t.Fatal(st)
			}
			refused := -1
			for i, n := range tc.chunks {
				if st := f.OnReceiveData(ctx, api.NewBufferString(strings.Repeat("a", n)), i == len(tc.chunks)-1); st == api.Stop {
					refused = i
					break
				}
			}
			if refused != tc.refusedAt {
				t.Fatalf("refused at chunk %d, want %d", refused, tc.refusedAt)
			}
			if refused >= 0 && (ctx.Replied.Code != 413 || env.Count("request_too_large_streamed") != 1 || env.Count("request_too_large") != 1) {
				t.Fatalf("reply %+v metrics %v", ctx.Replied, env.Values())
			}
		})
	}
}

// With a Content-Length within the limit the data hook does not count.
func TestRequestWithinContentLengthIsNotCounted(t *testing.T) {
	c, _ := parse(t, `{"max_request_body": 10}`)
	f := newFilter(c).(*reqFilter)
	req := fakeframework.NewRequest("POST", "/", "content-length", "10")
	ctx := fakeframework.NewContext(Name, req)
	f.OnReceive(ctx, req, nil, nil)
	if st := f.OnReceiveData(ctx, api.NewBufferString("0123456789"), true); st != api.Continue || f.seen != 0 {
		t.Fatalf("status %v seen %d", st, f.seen)
	}
}

func TestResponseLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		status int
		length string
		want   api.Status
	}{
		{"under", "GET", 200, "100", api.Continue},
		{"over", "GET", 200, "101", api.Stop},
		{"HEAD: no body follows", "HEAD", 200, "5000", api.Continue},
		{"304: no body follows", "GET", 304, "5000", api.Continue},
		{"no content-length", "GET", 200, "", api.Continue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, env := parse(t, `{"max_response_body": 100, "response_status": 502, "response_body": "upstream answer too large"}`)
			f := newFilter(c).(*respFilter)
			var kv []string
			if tc.length != "" {
				kv = []string{"content-length", tc.length}
			}
			ctx, st := fakeframework.RunSend(Name, f, fakeframework.NewRequest(tc.method, "/"), fakeframework.NewResponse(tc.status, kv...), nil)
			if st != tc.want {
				t.Fatalf("status %v, want %v", st, tc.want)
			}
			if st == api.Stop && (ctx.Replied.Code != 502 || ctx.Replied.Body != "upstream answer too large" || env.Count("response_too_large") != 1) {
				t.Fatalf("reply %+v metrics %v", ctx.Replied, env.Values())
			}
		})
	}
	// Chunked: counted.
	c, env := parse(t, `{"max_response_body": 10}`)
	f := newFilter(c).(*respFilter)
	req := fakeframework.NewRequest("GET", "/")
	resp := fakeframework.NewResponse(200)
	ctx := fakeframework.NewContext(Name, req).WithResponse(resp)
	if st := f.Append(ctx, resp, nil, nil); st != api.Continue {
		t.Fatal(st)
	}
	if st := f.AppendData(ctx, api.NewBufferString("0123456789"), false); st != api.Continue {
		t.Fatal(st)
	}
	if st := f.AppendData(ctx, api.NewBufferString("x"), true); st != api.Stop || ctx.Replied.Code != 500 || env.Count("response_too_large_streamed") != 1 {
		t.Fatalf("status %v reply %+v metrics %v", st, ctx.Replied, env.Values())
	}
}

// The filter type follows the configured directions, so a direction without
// a limit costs nothing.
func TestFilterTypePerConfig(t *testing.T) {
	for _, tc := range []struct {
		config        string
		recv, send    bool
		reqBody, resp api.BodyMode
	}{
		{`{"max_request_body": 1}`, true, false, api.StreamingBody, api.HeadersOnly},
		{`{"max_response_body": 1}`, false, true, api.HeadersOnly, api.StreamingBody},
		{`{"max_request_body": 1, "max_response_body": 1}`, true, true, api.StreamingBody, api.StreamingBody},
	} {
		c, _ := parse(t, tc.config)
		f := newFilter(c)
		_, recv := f.(api.StreamingReceiver)
		_, send := f.(api.StreamingSender)
		n := c.Needs()
		if recv != tc.recv || send != tc.send || n.RequestBody != tc.reqBody || n.ResponseBody != tc.resp || n.MayBlock != 0 {
			t.Errorf("%s: recv %v send %v needs %+v", tc.config, recv, send, n)
		}
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ config, field, reason string }{
		{`{}`, "max_request_body", "set max_request_body or max_response_body"},
		{`{"max_request_body": "ten"}`, "max_request_body", "invalid size"},
		{`{"max_request_body": -5}`, "max_request_body", "between 0 and"},
		{`{"max_response_body": "1.5"}`, "max_response_body", "not a whole number"},
		{`{"max_request_body": 1, "status": 200}`, "status", "must be a 4xx or 5xx status"},
		{`{"max_request_body": 1, "response_status": 99}`, "response_status", "must be a 4xx or 5xx status"},
		{`{"max_request_body": 1, "body": "a\u0000b"}`, "body", "NUL"},
		{`{"max_request_bytes": 1}`, "max_request_bytes", "unknown field"},
	} {
		t.Run(tc.field+"/"+tc.reason, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
		})
	}
}
