package extauth

import (
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// Checked only (moectl validate), a config builds no HTTP client: the service is never
// reached; Destroy copes.
func TestCheckOnlyBuildsNoClient(t *testing.T) {
	ln := fakeframework.NewListener(t)
	var c *Config
	fakeframework.StartsNoGoroutine(t, func() {
		var err error
		c, _, err = fakeframework.Check[*Config](t, Name, newConfig, `{"url":"http://`+ln.Addr()+`","cache":{"ttl":"1s"}}`, false)
		if err != nil {
			t.Fatal(err)
		}
	})
	if c.rt.client != nil {
		t.Error("an HTTP client was built")
	}
	c.Destroy()
	ln.WantNoConnection(t, 50*time.Millisecond)
	// What the config is checked for is still checked.
	fakeframework.WantCheckError(t, Name, `{"url":"http://user:pw@`+ln.Addr()+`"}`, "url", "must not carry credentials")
	fakeframework.WantCheckError(t, Name, `{"url":"ftp://`+ln.Addr()+`"}`, "url", "absolute http(s) URL")
}
