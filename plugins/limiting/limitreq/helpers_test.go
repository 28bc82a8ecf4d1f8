package limitreq

import (
	"sync"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// newCtx builds a request context for req from the downstream address remote.
func newCtx(remote string, req *fakeframework.Request) *fakeframework.Context {
	return fakeframework.NewContext(Name, req).From(remote)
}

func newReq(kv ...string) *fakeframework.Request { return fakeframework.NewRequest("GET", "/", kv...) }

// fakeClock is a manual clock, safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

// parse decodes a JSON config the way the framework does (defaults, strict
// decode, Validate, Init) with readable metrics and, if clock != nil, a fake
// clock.
func parse(t testing.TB, raw string, clock *fakeClock) (*Config, *fakeframework.Env) {
	t.Helper()
	c, env := fakeframework.MustParse[*Config](t, Name, newConfig, raw)
	if clock != nil {
		c.rt.now = clock.Now
	}
	return c, env
}

func filterOf(c *Config) api.ReceiverFilter { return fakeframework.ReceiverFilter(Name, c) }
