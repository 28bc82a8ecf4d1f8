package filtermanager_test

import (
	"sync/atomic"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

// receiveCounter counts the requests it saw.
type receiveCounter struct{ seen atomic.Int32 }

func (f *receiveCounter) OnReceive(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status {
	f.seen.Add(1)
	return api.Continue
}

// handlerTaker is a receiveCounter that is given the request's handler.
type handlerTaker struct {
	receiveCounter
	handlers atomic.Int32
}

func (f *handlerTaker) SetReceiveFilterHandler(api.ReceiverFilterHandler) { f.handlers.Add(1) }

// zeroReceiver carries nothing.
type zeroReceiver struct{}

func (zeroReceiver) OnReceive(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status {
	return api.Continue
}

// A factory that hands out one config-time filter is not called per request;
// one that builds a filter per request, or whose filter takes the request's
// handlers, still is.
func TestFactoryCalledPerRequestOnlyWhenFiltersDiffer(t *testing.T) {
	const requests = 3
	one, oneTaker := &receiveCounter{}, &handlerTaker{}
	cases := []struct {
		name       string
		filter     func() any
		perRequest bool
	}{
		{"the same pointer every time", func() any { return one }, false},
		{"a value without fields", func() any { return zeroReceiver{} }, false},
		{"a new pointer every time", func() any { return &receiveCounter{} }, true},
		{"the same pointer given handlers", func() any { return oneTaker }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			p := plugin(t, api.Needs{}, func() any { calls.Add(1); return tc.filter() })
			chain := mustChain(t, p)
			built := calls.Load()
			for range requests {
				if res := do(t, chain, fakeenvoy.Request{}); res.Status != 200 {
					t.Fatalf("status %d", res.Status)
				}
			}
			want := built
			if tc.perRequest {
				want += requests
			}
			if got := calls.Load(); got != want {
				t.Errorf("factory called %d times after %d requests, want %d (%d while building the chain)", got, requests, want, built)
			}
		})
	}
	if got := one.seen.Load(); got != requests {
		t.Errorf("the shared filter saw %d requests, want %d", got, requests)
	}
	if got := oneTaker.handlers.Load(); got != requests {
		t.Errorf("the handler-taking filter got %d handlers, want one per request (%d)", got, requests)
	}
}
