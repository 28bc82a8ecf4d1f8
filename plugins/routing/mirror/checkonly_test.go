package mirror

import (
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// Checked only (moectl validate), a config starts no worker pool and builds no client;
// for real, every target has its workers. Destroy copes with either.
func TestCheckOnlyStartsNoWorkers(t *testing.T) {
	ln := fakeframework.NewListener(t)
	js := `{"targets": [{"name": "a", "url": "http://` + ln.Addr() + `"}, {"name": "b", "url": "http://` + ln.Addr() + `"}], "workers": 4}`
	var c *Config
	fakeframework.StartsNoGoroutine(t, func() {
		var err error
		if c, _, err = fakeframework.Check[*Config](t, Name, newConfig, js, false); err != nil {
			t.Fatal(err)
		}
	})
	for _, tg := range c.targets {
		if tg.pool != nil {
			t.Errorf("target %s has a worker pool", tg.name)
		}
	}
	c.Destroy()
	ln.WantNoConnection(t, 0)

	fakeframework.StartsGoroutine(t, func() { parse(t, js) })
}
