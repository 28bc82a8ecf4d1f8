package basicauth

import (
	"encoding/base64"
	"strings"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// fuzzUsers are the consumers of FuzzAuthorization: user-id -> password.
var fuzzUsers = map[string]string{"alice": "alice-pw", "dörte": "pässwörd:with:colons", "carol": ":"}

// referenceBasic is RFC 7617 read plainly: one Authorization value,
// "Basic" (any case), one or more spaces, a base64 token, "user:pass".
func referenceBasic(vs []string) (user, pass string, ok bool) {
	if len(vs) != 1 {
		return "", "", false
	}
	scheme, rest, _ := strings.Cut(vs[0], " ")
	if !strings.EqualFold(scheme, "basic") {
		return "", "", false
	}
	b, err := base64.StdEncoding.DecodeString(strings.Trim(rest, " \t"))
	if err != nil {
		return "", "", false
	}
	user, pass, ok = strings.Cut(string(b), ":")
	return norm.NFC.String(user), norm.NFC.String(pass), ok
}

// FuzzAuthorization: basic-auth's Authorization parsing and check on any
// header values (a "\n" in the input separates repeated headers). A request
// passes only with a consumer's exact user-id and password (up to Unicode
// NFC); a refusal is 401 with the Basic challenge, and its body never
// repeats the header.
func FuzzAuthorization(f *testing.F) {
	b64 := base64.StdEncoding.EncodeToString
	for _, s := range []string{
		"Basic " + b64([]byte("alice:alice-pw")), "basic  " + b64([]byte("alice:alice-pw")) + " ",
		"Basic " + b64([]byte("alice:wrong")), "Basic " + b64([]byte("dörte:pässwörd:with:colons")),
		"Basic " + b64([]byte("do\u0308rte:pa\u0308sswo\u0308rd:with:colons")), "Basic " + b64([]byte("carol::")), "Basic " + b64([]byte("carol:")),
		"Basic " + b64([]byte("alice:alice-pw")) + "\nBasic " + b64([]byte("alice:alice-pw")),
		"Bearer abc", "Basic", "Basic !!!", "Basic " + b64([]byte("alice")), "Basic " + b64([]byte("al\x00ice:alice-pw")),
		"Basic " + b64([]byte("alice:alice-pw"))[:8] + "\r\n" + b64([]byte("alice:alice-pw"))[8:],
	} {
		f.Add(s)
	}
	cfg, _ := mustParse(f, map[string]any{"consumers": []map[string]any{
		{"name": "alice", "password": fuzzUsers["alice"]},
		{"name": "dörte", "password": fuzzUsers["dörte"]},
		{"name": "carol", "password": fuzzUsers["carol"]},
	}})
	f.Fuzz(func(t *testing.T, header string) {
		if len(header) > 8192 {
			t.Skip()
		}
		vs := strings.Split(header, "\n")
		kv := make([]string, 0, 2*len(vs))
		for _, v := range vs {
			kv = append(kv, "authorization", v)
		}
		ctx, st := run(cfg, fakeframework.NewRequest("GET", "/", kv...))
		user, pass, ok := referenceBasic(vs)
		valid := ok && fuzzUsers[user] != "" && norm.NFC.String(fuzzUsers[user]) == pass && !strings.ContainsAny(user+pass, "\x00\x7f") && len(header) <= 4096
		for _, c := range user + pass {
			if c < 0x20 {
				valid = false
			}
		}
		switch st {
		case api.Continue:
			c := ctx.Consumer()
			if c == nil || !valid {
				t.Fatalf("%q passed as %v; reference: user %q pass %q ok %v", header, c, user, pass, ok)
			}
			if c.Name != user {
				t.Fatalf("%q authenticated as %q, want %q", header, c.Name, user)
			}
		default:
			if valid {
				t.Fatalf("%q refused (%v); reference: user %q pass %q", header, ctx.Replied, user, pass)
			}
			r := ctx.Replied
			if r == nil || r.Code != 401 || !strings.HasPrefix(r.Header("www-authenticate"), "Basic ") {
				t.Fatalf("%q: refusal %+v, want 401 with a Basic challenge", header, r)
			}
			if len(header) >= 8 && strings.Contains(r.Body, header) {
				t.Fatalf("%q: the refusal repeats the header: %q", header, r.Body)
			}
		}
	})
}
