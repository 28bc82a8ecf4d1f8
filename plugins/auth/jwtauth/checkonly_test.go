package jwtauth

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/fakeframework"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// Checked only (moectl validate), a config with a jwks.url starts no refresher and never
// fetches the URL; for real, the same config fetches it at once.
func TestCheckOnlyFetchesNoJWKS(t *testing.T) {
	ln := fakeframework.NewListener(t)
	js := `{"jwks":{"url":"http://` + ln.Addr() + `/jwks"}}`
	var cfg *Config
	fakeframework.StartsNoGoroutine(t, func() {
		var err error
		if cfg, _, err = initConfig(js, false, true); err != nil {
			t.Fatal(err)
		}
	})
	ln.WantNoConnection(t, 100*time.Millisecond)
	cfg.Destroy()
	fakeframework.WantCheckError(t, Name, `{"jwks":{"url":"ftp://`+ln.Addr()+`"}}`, "jwks.url", "absolute http(s) URL")

	// The converse: Init for real starts the refresher, which connects.
	real, _, err := initConfig(js, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer real.Destroy()
	tb.Eventually(t, "the real refresher's fetch", func() bool { return ln.Connections() > 0 })
}

// A jwks.file is loaded when checking, as at Envoy's start: a missing or broken file is
// the same config error.
func TestCheckOnlyLoadsTheJWKSFile(t *testing.T) {
	testKeys(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(good, jwksJSON(t, map[string]any{"k1": &rsaKey.PublicKey}), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"keys":`), 0o600); err != nil {
		t.Fatal(err)
	}
	var cfg *Config
	fakeframework.StartsNoGoroutine(t, func() {
		var err error
		if cfg, _, err = initConfig(`{"jwks":{"file":"`+good+`"}}`, false, true); err != nil {
			t.Fatal(err)
		}
	})
	if cfg.rt.jwks.keys() == nil {
		t.Error("the file's keys were not loaded")
	}
	cfg.Destroy()
	for f, reason := range map[string]string{bad: "parsing JWKS", filepath.Join(dir, "missing.json"): "no such file"} {
		fakeframework.WantCheckError(t, Name, `{"jwks":{"file":"`+f+`"}}`, "jwks.file", reason)
	}
	// What only Init checks: no key source, key lengths.
	fakeframework.WantCheckError(t, Name, `{}`, "keys", "no key source")
	fakeframework.WantCheckError(t, Name, `{"keys":[{"secret":"12345"}]}`, "keys[0]", "")
}
