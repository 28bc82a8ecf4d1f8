package fuzzcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/registry"
)

// MaxConfigBytes bounds the fuzzed configs: the framework parses what Envoy
// hands it whatever its size, but a config of megabytes tells nothing a
// smaller one does not, and slows the fuzzer down.
const MaxConfigBytes = 16 << 10

// PluginConfig is the config fuzz target of one plugin: seeded with the
// plugin's configs from the repository plus extra, it runs config.CheckPlugin
// (strict decode over the defaults, then Validate; no Init) at filter and at
// route level on every input and fails on a panic, an error that is not a
// *config.Error of this plugin, an error that names no field when the input
// was an object, a secret of the config repeated in the message, or two
// different answers for the same input.
func PluginConfig(f *testing.F, plugin string, extra ...string) {
	p, ok := registry.Get(plugin)
	if !ok {
		f.Fatalf("plugin %q is not registered", plugin)
	}
	for _, s := range PluginSeeds(plugin) {
		f.Add(s)
	}
	for _, s := range extra {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > MaxConfigBytes {
			t.Skip()
		}
		for _, route := range []bool{false, true} {
			check := func() error { return config.CheckPlugin(p, raw, route) }
			err := noPanic(t, "CheckPlugin", raw, check)
			CheckConfigError(t, plugin, raw, err, func(b []byte) error { return config.CheckPlugin(p, b, route) })
			if again := noPanic(t, "CheckPlugin", raw, check); errString(again) != errString(err) {
				t.Fatalf("CheckPlugin(%q) answered twice differently:\n%v\n%v", raw, err, again)
			}
		}
	})
}

// Chain is the fuzz target of the moe filter config itself
// ({plugins, consumers}), through config.CheckChain at filter and route
// level, with the same checks as PluginConfig (the plugin named in an error
// is whichever the error is about).
func Chain(f *testing.F, extra ...string) {
	for _, s := range ChainSeeds() {
		f.Add(s)
	}
	for _, s := range extra {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"plugins":[]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > MaxConfigBytes {
			t.Skip()
		}
		for _, route := range []bool{false, true} {
			check := func() error { return config.CheckChain(raw, route) }
			err := noPanic(t, "CheckChain", raw, check)
			CheckConfigError(t, "*", raw, err, func(b []byte) error { return config.CheckChain(b, route) })
			if again := noPanic(t, "CheckChain", raw, check); errString(again) != errString(err) {
				t.Fatalf("CheckChain(%q) answered twice differently:\n%v\n%v", raw, err, again)
			}
		}
	})
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func noPanic(t *testing.T, what string, raw []byte, fn func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("%s panicked on %q: %v\n%s", what, raw, r, debug.Stack())
		}
	}()
	return fn()
}

// CheckConfigError checks one config error: a *config.Error naming plugin
// ("*": any plugin, or none for the chain's own structure), with a reason,
// with a field unless the input was not a JSON object at all, and without
// any secret value of the input in its text. recheck parses a config again
// (to tell a secret echoed from one that happens to spell a word of the
// message: the secret is changed, letter for letter, and checked again).
func CheckConfigError(t *testing.T, plugin string, raw []byte, err error, recheck func([]byte) error) {
	t.Helper()
	if err == nil {
		return
	}
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("config %q: error is %T, not *config.Error: %v", raw, err, err)
	}
	if plugin != "*" && ce.Plugin != plugin {
		t.Fatalf("config %q: error names plugin %q, want %q: %v", raw, ce.Plugin, plugin, err)
	}
	if strings.TrimSpace(ce.Reason) == "" {
		t.Fatalf("config %q: error without a reason: %v", raw, err)
	}
	if ce.Field == "" && !wholeConfigError(raw, ce) {
		t.Fatalf("config %q: error names no field: %v", raw, err)
	}
	if s := leakedSecret(plugin, raw, err.Error()); s != "" {
		// Change the secret's letters and digits (same classes, same length)
		// and parse again: an echo follows the change, a coincidence does not.
		s2 := shift(s)
		raw2 := bytes.ReplaceAll(raw, []byte(s), []byte(s2))
		if err2 := recheck(raw2); err2 != nil && strings.Contains(err2.Error(), s2) {
			t.Fatalf("config %q: error repeats the secret %q: %v", raw, s, err)
		}
	}
}

// wholeConfigError: errors about the config as a whole, which have no field
// to name: input that is not JSON, or not an object, and a config given to
// a plugin that takes none.
func wholeConfigError(raw []byte, ce *config.Error) bool {
	if strings.HasPrefix(ce.Reason, "malformed JSON") || ce.Reason == "this plugin takes no config" {
		return true
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return true
	}
	if _, ok := v.(map[string]any); !ok {
		return true // "expected an object, got a list"
	}
	return false
}

// secretKeys are the config fields whose values are credentials.
var secretKeys = map[string]bool{
	"password": true, "password_hash": true, "secret": true, "secret_base64": true,
	"token": true, "pem": true,
}

// jwkSecretKeys are the members of a JSON Web Key that hold key material
// (RFC 7517 6.2.2 "k" of a symmetric key, RFC 7518 6.3.2 the RSA private
// members, 6.2.2 "d" of an EC key). They are secrets only inside a JWK (the
// value of a "jwk" field): elsewhere one-letter names are the user's own, e.g.
// access-log's json field names, whose values are templates that an error
// rightly quotes.
var jwkSecretKeys = map[string]bool{
	"k": true, "d": true, "p": true, "q": true, "dp": true, "dq": true, "qi": true,
}

// leakedSecret returns a credential of the config (at least 8 bytes, found
// nowhere else in it) that the message repeats, or "". Credentials are the
// values of secretKeys and key-auth's keys (in its config, or in a chain
// consumer's auth.key-auth).
func leakedSecret(plugin string, raw []byte, msg string) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return ""
	}
	var secrets, others []string
	// inJWK: v is a member of the object given as a "jwk".
	var visit func(v any, key string, inKeys, keyAuth, inJWK bool)
	visit = func(v any, key string, inKeys, keyAuth, inJWK bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				others = append(others, k)
				visit(e, k, false, keyAuth || k == "key-auth", key == "jwk")
			}
		case []any:
			for _, e := range x {
				visit(e, key, keyAuth && key == "keys", keyAuth, false)
			}
		case string:
			if secretKeys[key] || (inJWK && jwkSecretKeys[key]) || inKeys {
				secrets = append(secrets, x)
			} else {
				others = append(others, x)
			}
		case json.Number:
			others = append(others, string(x))
		}
	}
	visit(v, "", false, plugin == "key-auth", false)
	for _, s := range secrets {
		if len(s) < 8 || !strings.Contains(msg, s) {
			continue
		}
		elsewhere := false
		for _, o := range others {
			if strings.Contains(o, s) {
				elsewhere = true
				break
			}
		}
		// Also quoted or escaped forms of other fields, e.g. a name echoed
		// with %q, are "elsewhere" only when the secret is in a non-secret.
		if !elsewhere {
			return s
		}
	}
	return ""
}

// shift maps letters and digits to the next one of their class
// (z to a, Z to A, 9 to 0); anything else stays.
func shift(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c == 'z':
			b[i] = 'a'
		case c == 'Z':
			b[i] = 'A'
		case c == '9':
			b[i] = '0'
		case ('a' <= c && c < 'z') || ('A' <= c && c < 'Z') || ('0' <= c && c < '9'):
			b[i] = c + 1
		}
	}
	return string(b)
}

// Describe is a short form of a fuzz input for messages.
func Describe(b []byte) string {
	if len(b) > 200 {
		return fmt.Sprintf("%q... (%d bytes)", b[:200], len(b))
	}
	return fmt.Sprintf("%q", b)
}
