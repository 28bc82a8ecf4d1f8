package fault

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// within reports whether got is within 5 standard deviations of the
// binomial expectation for n draws at fraction p: a correct sampler fails
// this about once in 1.7 million runs.
func within(got, n int, p float64) (bool, string) {
	want := float64(n) * p
	sd := math.Sqrt(float64(n) * p * (1 - p))
	return math.Abs(float64(got)-want) <= 5*sd, fmt.Sprintf("%d of %d, want %.1f ± %.1f (5σ)", got, n, want, 5*sd)
}

// Percentages are accurate over many requests: the sampler alone, 200 000
// draws per percentage.
func TestSamplerIsAccurate(t *testing.T) {
	const n = 200_000
	for _, pct := range []float64{0, 0.01, 0.5, 1, 10, 25, 33.3, 50, 90, 99.9, 100} {
		s := newSampler(&pct)
		hits := 0
		for i := 0; i < n; i++ {
			if s.hit() {
				hits++
			}
		}
		switch pct {
		case 0, 100:
			if hits != int(float64(n)*pct/100) {
				t.Errorf("%v%%: %d of %d", pct, hits, n)
			}
		default:
			if ok, msg := within(hits, n, pct/100); !ok {
				t.Errorf("%v%%: %s", pct, msg)
			}
		}
	}
	if s := newSampler(nil); !s.always {
		t.Errorf("unset percentage: %+v, want every request", s)
	}
}

// Through the filter: aborts and delays drawn independently, each at its
// percentage of the matching requests, counted by the metrics.
func TestFaultPercentagesThroughTheFilter(t *testing.T) {
	const n = 20_000
	c, env := parse(t, `{"match": {"headers": [{"name": "x-chaos", "exact": "on"}]},
		"delay": {"duration": "1us", "percentage": 10}, "abort": {"status": 503, "percentage": 25}}`)
	both := 0
	for i := 0; i < n; i++ {
		req := fakeframework.NewRequest("GET", "/", "x-chaos", "on")
		ctx, st := fakeframework.Run(Name, (*filter)(c), req, nil)
		if st == api.Stop && ctx.Replied.Code != 503 {
			t.Fatalf("reply %+v", ctx.Replied)
		}
		if v, _ := ctx.GetState(StateKey); v == "delay,abort" {
			both++
		}
	}
	if ok, msg := within(int(env.Count("aborts_injected")), n, 0.25); !ok {
		t.Errorf("aborts: %s", msg)
	}
	if ok, msg := within(int(env.Count("delays_injected")), n, 0.10); !ok {
		t.Errorf("delays: %s", msg)
	}
	if ok, msg := within(both, n, 0.025); !ok {
		t.Errorf("both (independent draws): %s", msg)
	}
	if env.Value("active_faults") != 0 {
		t.Errorf("active_faults = %d after the requests", env.Value("active_faults"))
	}
}

func TestOnlyMatchingRequests(t *testing.T) {
	for _, tc := range []struct {
		name, match string
		req         *fakeframework.Request
		hit         bool
	}{
		{"header matches", `{"headers": [{"name": "x-chaos", "exact": "on"}]}`, fakeframework.NewRequest("GET", "/", "x-chaos", "on"), true},
		{"header differs", `{"headers": [{"name": "x-chaos", "exact": "on"}]}`, fakeframework.NewRequest("GET", "/", "x-chaos", "off"), false},
		{"header absent", `{"headers": [{"name": "x-chaos"}]}`, fakeframework.NewRequest("GET", "/"), false},
		{"variable matches", `{"vars": [{"name": "$arg_user", "exact": "tester"}]}`, fakeframework.NewRequest("GET", "/x?user=tester"), true},
		{"variable differs", `{"vars": [{"name": "$arg_user", "exact": "tester"}]}`, fakeframework.NewRequest("GET", "/x?user=alice"), false},
		{"CEL true", `{"cel": "request.method == 'POST' && request.url_path.startsWith('/orders')"}`, fakeframework.NewRequest("POST", "/orders/1"), true},
		{"CEL false", `{"cel": "request.method == 'POST' && request.url_path.startsWith('/orders')"}`, fakeframework.NewRequest("GET", "/orders/1"), false},
		{"CEL error is no match", `{"cel": "request.headers['x-missing'] == 'a'"}`, fakeframework.NewRequest("GET", "/"), false},
		{"no match: every request", ``, fakeframework.NewRequest("GET", "/"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := `{"abort": {"status": 418, "body": "teapot", "headers": {"X-Fault": "abort"}}}`
			if tc.match != "" {
				js = `{"match": ` + tc.match + `, "abort": {"status": 418, "body": "teapot", "headers": {"X-Fault": "abort"}}}`
			}
			c, env := parse(t, js)
			ctx, st := fakeframework.Run(Name, (*filter)(c), tc.req, nil)
			if (st == api.Stop) != tc.hit {
				t.Fatalf("status %v, want hit=%v", st, tc.hit)
			}
			if !tc.hit {
				if ctx.Replied != nil || env.Count("aborts_injected") != 0 {
					t.Fatalf("reply %+v", ctx.Replied)
				}
				return
			}
			if ctx.Replied.Code != 418 || ctx.Replied.Body != "teapot" || ctx.Replied.Header("x-fault") != "abort" || env.Count("aborts_injected") != 1 {
				t.Fatalf("reply %+v metrics %v", ctx.Replied, env.Values())
			}
			if v, _ := ctx.GetState(StateKey); v != "abort" {
				t.Fatalf("state %v", v)
			}
		})
	}
}

func TestDelayWaitsThenGoesOn(t *testing.T) {
	c, env := parse(t, `{"delay": {"duration": "50ms"}}`)
	start := time.Now()
	ctx, st := fakeframework.Run(Name, (*filter)(c), fakeframework.NewRequest("GET", "/"), nil)
	if el := time.Since(start); st != api.Continue || el < 50*time.Millisecond || ctx.Replied != nil {
		t.Fatalf("status %v after %v, reply %+v", st, el, ctx.Replied)
	}
	if env.Count("delays_injected") != 1 {
		t.Fatalf("metrics %v", env.Values())
	}
	if v, _ := ctx.GetState(StateKey); v != "delay" {
		t.Fatalf("state %v", v)
	}
}

// A delayed request whose client goes away stops waiting at once.
func TestDelayEndsWhenTheRequestEnds(t *testing.T) {
	c, env := parse(t, `{"delay": {"duration": "10m"}, "abort": {"status": 503}}`)
	req := fakeframework.NewRequest("GET", "/")
	ctx := fakeframework.NewContext(Name, req)
	cctx, cancel := context.WithCancel(context.Background())
	ctx.Context = cctx
	done := make(chan api.Status)
	go func() { done <- (*filter)(c).OnReceive(ctx, req, nil, nil) }()
	time.Sleep(20 * time.Millisecond)
	if env.Value("active_faults") != 1 {
		t.Fatalf("active_faults = %d while waiting", env.Value("active_faults"))
	}
	cancel()
	select {
	case st := <-done:
		if st != api.Continue || ctx.Replied != nil || env.Value("active_faults") != 0 || env.Count("aborts_injected") != 0 {
			t.Fatalf("status %v reply %+v metrics %v", st, ctx.Replied, env.Values())
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the delay did not end with the request")
	}
}

// Past max_active_faults requests go on untouched.
func TestMaxActiveFaults(t *testing.T) {
	c, env := parse(t, `{"delay": {"duration": "10m"}, "max_active_faults": 1}`)
	req := fakeframework.NewRequest("GET", "/")
	waiting := fakeframework.NewContext(Name, req)
	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waiting.Context = cctx
	done := make(chan struct{})
	go func() { (*filter)(c).OnReceive(waiting, req, nil, nil); close(done) }()
	if !tb.Poll(5*time.Second, func() bool { return env.Value("active_faults") == 1 }) {
		t.Fatalf("active_faults = %d while the first request waits, want 1", env.Value("active_faults"))
	}
	start := time.Now()
	if _, st := fakeframework.Run(Name, (*filter)(c), req, nil); st != api.Continue || time.Since(start) > time.Second {
		t.Fatalf("second request: %v after %v", st, time.Since(start))
	}
	if env.Count("faults_overflow") != 1 || env.Count("delays_injected") != 1 {
		t.Fatalf("metrics %v", env.Values())
	}
	cancel()
	<-done
}

func TestNeeds(t *testing.T) {
	for _, tc := range []struct {
		config string
		block  bool
	}{
		{`{"abort": {"status": 503}}`, false},
		{`{"delay": {"duration": "1s"}}`, true},
		{`{"delay": {"duration": "1s", "percentage": 0}, "abort": {"status": 503}}`, false},
		{`{"delay": {"duration": "1s", "percentage": 0.001}}`, true},
	} {
		c, _ := parse(t, tc.config)
		if got := c.Needs().MayBlock&api.BlockReceive != 0; got != tc.block {
			t.Errorf("%s: may block %v, want %v", tc.config, got, tc.block)
		}
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct{ config, field, reason string }{
		{`{}`, "delay", "set delay or abort"},
		{`{"delay": {}}`, "delay.duration", "must be greater than 0"},
		{`{"delay": {"duration": "11m"}}`, "delay.duration", "must be between"},
		{`{"delay": {"duration": "1s", "percentage": 101}}`, "delay.percentage", "between 0 and 100"},
		{`{"delay": {"duration": "1s", "percentage": -1}}`, "delay.percentage", "between 0 and 100"},
		{`{"delay": {"duration": "soon"}}`, "delay.duration", "invalid duration"},
		{`{"abort": {}}`, "abort.status", "between 200 and 599"},
		{`{"abort": {"status": 600}}`, "abort.status", "between 200 and 599"},
		{`{"abort": {"status": 503, "percentage": 200}}`, "abort.percentage", "between 0 and 100"},
		{`{"abort": {"status": 503, "headers": {"x bad": "1"}}}`, "abort.headers.x bad", "not a valid header name"},
		{`{"abort": {"status": 503, "headers": {"x-a": "1\r\nx-b: 2"}}}`, "abort.headers.x-a", "CR, LF or NUL"},
		{`{"abort": {"status": 503, "headers": {"Content-Length": "1"}}}`, "abort.headers.Content-Length", "set by the proxy"},
		{`{"abort": {"status": 503}, "max_active_faults": -1}`, "max_active_faults", "between 0 and"},
		{`{"abort": {"status": 503}, "match": {"headers": [{"name": "x", "regex": "("}]}}`, "match.headers[0]", "regex"},
		{`{"abort": {"status": 503}, "match": {"cel": "request.nope == 1"}}`, "match.cel", "undeclared reference"},
		{`{"abort": {"status": 503, "code": 1}}`, "abort.code", "unknown field"},
	} {
		t.Run(tc.field+"/"+tc.reason, func(t *testing.T) {
			fakeframework.WantConfigError(t, Name, tc.config, tc.field, tc.reason)
		})
	}
}
