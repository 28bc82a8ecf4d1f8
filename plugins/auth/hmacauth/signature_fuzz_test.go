package hmacauth

import (
	"crypto/hmac"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// FuzzSignatureHeader: the auth-params of "Authorization: Signature ..."
// never panic the parser; what it accepts has its three required
// parameters, values without quotes or backslashes taken from the input,
// and reads back the same once written in canonical form.
func FuzzSignatureHeader(f *testing.F) {
	for _, s := range []string{
		`keyId="k1",algorithm="hmac-sha256",headers="@request-target date x-nonce",signature="c2ln"`,
		`keyId="k1" , algorithm="hmac-sha256",signature="c2ln",created="1"`,
		`keyId="k1",keyId="k2",algorithm="a",signature="s"`,
		`keyId="k\"1",algorithm="a",signature="s"`,
		`keyId=k1,algorithm="a",signature="s"`,
		`=,`, `keyId="`, `keyId="a",`, "keyId=\"a\"\t,\talgorithm=\"b\",signature=\"c\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, ok := parseSignature(s)
		if !ok {
			return
		}
		for _, v := range []string{p.keyID, p.algorithm, p.headers, p.signature} {
			if strings.ContainsAny(v, `"\`) || !strings.Contains(s, v) {
				t.Fatalf("parseSignature(%q) = %+v: value %q is not a quoted value of the input", s, p, v)
			}
		}
		if p.keyID == "" || p.algorithm == "" || p.signature == "" {
			t.Fatalf("parseSignature(%q) accepted %+v without a required parameter", s, p)
		}
		canon := fmt.Sprintf(`keyId="%s",algorithm="%s",headers="%s",signature="%s"`, p.keyID, p.algorithm, p.headers, p.signature)
		if p2, ok := parseSignature(canon); !ok || p2 != p {
			t.Fatalf("parseSignature(%q) = %+v, its canonical form %q reads %+v, %v", s, p, canon, p2, ok)
		}
	})
}

var fuzzNonce atomic.Int64

// param reads one auth-param the plain way (values hold no quotes).
func param(auth, name string) string {
	m := regexp.MustCompile(`(?:^|[ ,\t])` + name + `[ \t]*=[ \t]*"([^"]*)"`).FindStringSubmatch(auth)
	if m == nil {
		return ""
	}
	return m[1]
}

func asciiToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// FuzzSignedRequest: a whole request through hmac-auth (fixed clock, the
// default replay window): the request is signed by the independent client
// (clientSign) and then, when tamper > 0, one byte of its Authorization
// header is changed; or, unsigned, carries the fuzzed header as is.
//   - accepted => the presented signature is what the client computes with
//     the key's secret over exactly this request, and the same request sent
//     again is refused as a replay;
//   - signed, untampered, a fresh nonce, a date inside the window and the
//     usual header list => accepted.
func FuzzSignedRequest(f *testing.F) {
	f.Add("GET", "/a?x=1", "@request-target date x-nonce", int16(0), "n1", false, "", uint16(0), byte(0), true)
	f.Add("POST", "/", "@request-target date x-nonce", int16(299), "n2", false, "", uint16(0), byte(0), true)
	f.Add("GET", "/", "@request-target date x-nonce", int16(-301), "n3", false, "", uint16(0), byte(0), true)
	f.Add("GET", "/", "date @request-target x-nonce x-extra", int16(10), "n4", true, "", uint16(30), byte(1), true)
	f.Add("GET", "/", "(request-target) date x-nonce", int16(0), "n5", false, "", uint16(0), byte(0), true)
	f.Add("GET", "/", "@request-target date", int16(0), "n6", false, "", uint16(0), byte(0), true)
	f.Add("GET", "/", "", int16(0), "n7", false, `Signature keyId="alice-1",algorithm="hmac-sha256",headers="@request-target date x-nonce",signature="AAAA"`, uint16(0), byte(0), false)
	c, _ := newTestConfig(f, nil)
	secrets := map[string]string{"alice-1": aliceSecret, "alice-2": aliceNew, "bob": bobSecret}
	f.Fuzz(func(t *testing.T, method, path, list string, dateOffset int16, nonce string, useBob bool, auth string, tamper uint16, flip byte, sign bool) {
		if len(path)+len(list)+len(nonce)+len(auth) > 4096 {
			t.Skip()
		}
		n := fuzzNonce.Add(1)
		if n%5000 == 0 {
			c.compiled.replay = newNonceStore(10000) // the fixed clock never expires a nonce
		}
		nonce = fmt.Sprintf("%s-%d", nonce, n)
		date := now.Add(time.Duration(dateOffset) * time.Second).Format(http.TimeFormat)
		hs := [][2]string{{"date", date}, {"x-nonce", nonce}, {"x-extra", "e"}}
		keyID, secret := "alice-1", aliceSecret
		if useBob {
			keyID, secret = "bob", bobSecret
		}
		if sign {
			auth = clientSign(keyID, secret, "hmac-sha256", method, path, hs, strings.Split(list, " "))
			if tamper > 0 {
				b := []byte(auth)
				i := int(tamper) % len(b)
				if flip == 0 {
					flip = 1
				}
				b[i] ^= flip
				auth = string(b)
			}
		}
		build := func() *fakeframework.Request {
			req := fakeframework.NewRequest(method, path, "date", date, "x-nonce", nonce, "x-extra", "e")
			req.Add("authorization", auth)
			return req
		}
		ctx, st := run(c, build())
		if st == api.Continue {
			id := param(auth, "keyId")
			alg := param(auth, "algorithm")
			want := clientSign(id, secrets[id], alg, method, path, hs, strings.Split(param(auth, "headers"), " "))
			if secrets[id] == "" || !hmac.Equal([]byte(param(want, "signature")), []byte(param(auth, "signature"))) {
				t.Fatalf("accepted %q (%s %q) as %v: the client computes %q", auth, method, path, ctx.Consumer(), want)
			}
			if _, st2 := run(c, build()); st2 == api.Continue {
				t.Fatalf("replayed %q (%s %q) accepted again", auth, method, path)
			}
			return
		}
		if ctx.Replied == nil || ctx.Replied.Code == 200 {
			t.Fatalf("%q refused without a reply: %+v", auth, ctx.Replied)
		}
		if len(auth) >= 16 && strings.Contains(ctx.Replied.Body, auth) {
			t.Fatalf("the refusal repeats the Authorization header: %q", ctx.Replied.Body)
		}
		if sign && tamper == 0 && (list == "@request-target date x-nonce" || list == "date @request-target x-nonce") &&
			dateOffset >= -299 && dateOffset <= 299 && asciiToken(method) && asciiToken(path) && asciiToken(nonce) && len(nonce) <= 64 {
			t.Fatalf("a correctly signed request (%s %q, date %+ds) was refused: %d %q", method, path, dateOffset, ctx.Replied.Code, ctx.Replied.Body)
		}
	})
}
