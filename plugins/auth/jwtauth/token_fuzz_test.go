package jwtauth

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"hash"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// fuzzKey is one key of FuzzToken's config as the reference verifier sees it.
type fuzzKey struct {
	kid  string
	algs []string
}

var fuzzKeys = []fuzzKey{
	{"hs", []string{"HS256", "HS384", "HS512"}},
	{"rsa", []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}},
	{"es", []string{"ES256"}},
}

func hashFor(alg string) (crypto.Hash, func() hash.Hash) {
	switch alg[2:] {
	case "384":
		return crypto.SHA384, sha512.New384
	case "512":
		return crypto.SHA512, sha512.New
	}
	return crypto.SHA256, sha256.New
}

// referenceVerify is RFC 7515/7518 with the standard library only: the
// JOSE header read by encoding/json (the lexically last of duplicate
// names, RFC 7515 4), no "crit", the alg one a configured key (of that kid,
// when the header names one) allows, the signature checked with crypto/*.
func referenceVerify(tok string) (hdr map[string]any, claims map[string]any, why string) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil, nil, "not three segments"
	}
	dec := func(s string) ([]byte, bool) {
		b, err := base64.RawURLEncoding.DecodeString(s)
		return b, err == nil && base64.RawURLEncoding.EncodeToString(b) == s
	}
	hb, ok1 := dec(parts[0])
	cb, ok2 := dec(parts[1])
	sig, ok3 := dec(parts[2])
	if !ok1 || !ok2 || !ok3 {
		return nil, nil, "not base64url"
	}
	if json.Unmarshal(hb, &hdr) != nil || hdr == nil {
		return nil, nil, "header is not a JSON object"
	}
	// RFC 7515 4 and RFC 7519 4: duplicate names are refused, or the last
	// one is used; this reference refuses them.
	if duplicateName(hb) || duplicateName(cb) {
		return hdr, nil, "a name given twice in the header or the claims"
	}
	if _, ok := hdr["crit"]; ok {
		return nil, nil, "crit"
	}
	alg, _ := hdr["alg"].(string)
	kidV, hasKid := hdr["kid"]
	kid, kidOK := kidV.(string)
	if hasKid && !kidOK {
		return nil, nil, "kid not a string"
	}
	input := []byte(parts[0] + "." + parts[1])
	verified := false
	for _, k := range fuzzKeys {
		if kid != "" && kid != k.kid {
			continue
		}
		allowed := false
		for _, a := range k.algs {
			allowed = allowed || a == alg
		}
		if !allowed {
			continue
		}
		h, newHash := hashFor(alg)
		d := newHash()
		d.Write(input)
		sum := d.Sum(nil)
		switch alg[:2] {
		case "HS":
			m := hmac.New(newHash, hmacKey)
			m.Write(input)
			verified = verified || hmac.Equal(m.Sum(nil), sig)
		case "RS":
			verified = verified || rsa.VerifyPKCS1v15(&rsaKey.PublicKey, h, sum, sig) == nil
		case "PS":
			verified = verified || rsa.VerifyPSS(&rsaKey.PublicKey, h, sum, sig, &rsa.PSSOptions{SaltLength: rsa.PSSSaltLengthAuto}) == nil
		case "ES":
			if len(sig) == 64 {
				r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
				verified = verified || ecdsa.Verify(&ecKeys["ES256"].PublicKey, sum, r, s)
			}
		}
	}
	if !verified {
		return hdr, nil, "no configured key verifies alg " + alg
	}
	d := json.NewDecoder(bytes.NewReader(cb))
	d.UseNumber()
	if d.Decode(&claims) != nil || claims == nil {
		return hdr, nil, "claims are not a JSON object"
	}
	now, leeway := float64(fixedNow.Unix()), 60.0
	num := func(name string) (float64, bool, bool) {
		v, ok := claims[name]
		if !ok {
			return 0, false, true
		}
		n, isNum := v.(json.Number)
		if !isNum {
			return 0, true, false
		}
		f, err := n.Float64()
		// 1e400 overflows to +Inf: a signed "never expires", not malformed.
		return f, true, err == nil || math.IsInf(f, 0)
	}
	if exp, set, ok := num("exp"); !ok || (set && now-leeway >= exp) {
		return hdr, claims, "exp"
	}
	if nbf, set, ok := num("nbf"); !ok || (set && now+leeway < nbf) {
		return hdr, claims, "nbf"
	}
	if iat, set, ok := num("iat"); !ok || (set && iat > now+leeway) {
		return hdr, claims, "iat"
	}
	return hdr, claims, ""
}

// duplicateName reports a top-level member name given twice in a JSON object.
func duplicateName(b []byte) bool {
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return false
		}
		k, _ := t.(string)
		if seen[k] {
			return true
		}
		seen[k] = true
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return false
		}
	}
	return false
}

// FuzzToken: jwt-auth's token parsing and verification (keys: an HMAC
// secret "hs", an RSA key "rsa", an EC P-256 key "es"). The token is the
// fuzzed header and claims, signed by the key keyChoice picks with the
// header's alg (0 the HMAC secret, 1 the RSA private key, 2 the EC private
// key, 3 the RSA public key's PEM as an HMAC secret: algorithm confusion,
// 4 a good HMAC signature with one bit flipped, 5 no signature, 6 the
// fuzzed bytes as the signature), or, with raw set, the fuzzed text as is.
// A token passes only when the standard-library reference verifies it
// (referenceVerify), never signed by choices 3-5.
func FuzzToken(f *testing.F) {
	testKeys(f)
	cl := string(mustJSON(claimsValid()))
	for _, s := range []struct {
		hdr    string
		choice uint8
	}{
		{`{"alg":"HS256","kid":"hs"}`, 0}, {`{"alg":"HS512"}`, 0}, {`{"alg":"RS256","kid":"rsa"}`, 1},
		{`{"alg":"PS384"}`, 1}, {`{"alg":"ES256","kid":"es"}`, 2}, {`{"alg":"HS256"}`, 3}, {`{"alg":"HS256","kid":"rsa"}`, 3},
		{`{"alg":"HS256"}`, 4}, {`{"alg":"none"}`, 5}, {`{"alg":"RS256","alg":"HS256"}`, 0}, {`{"alg":"HS256","alg":"RS256"}`, 0},
		{`{"alg":"HS256","crit":["exp"]}`, 0}, {`{"alg":"HS256","kid":7}`, 0}, {`{"alg":"ES256"}`, 6},
	} {
		f.Add([]byte(s.hdr), []byte(cl), s.choice, []byte("sig"), false, "")
	}
	f.Add([]byte(`{"alg":"HS256"}`), []byte(`{"exp":"soon"}`), uint8(0), []byte(""), false, "")
	f.Add([]byte(`{"alg":"HS256"}`), []byte(`{"exp":1e400}`), uint8(0), []byte(""), false, "")
	f.Add([]byte(`{}`), []byte(`{}`), uint8(0), []byte(""), true, "eyJhbGciOiJIUzI1NiJ9.e30.")
	f.Add([]byte(`{}`), []byte(`{}`), uint8(0), []byte(""), true, "a.b.c.d")
	cfg, _ := newRT(f, string(mustJSON(map[string]any{"keys": []any{
		map[string]any{"kid": "hs", "secret": string(hmacKey)},
		map[string]any{"kid": "rsa", "pem": pubPEM(f, &rsaKey.PublicKey)},
		map[string]any{"kid": "es", "pem": pubPEM(f, &ecKeys["ES256"].PublicKey)},
	}})))
	rsaPubPEM := []byte(pubPEM(f, &rsaKey.PublicKey))
	f.Fuzz(func(t *testing.T, hdr, claims []byte, keyChoice uint8, sigBytes []byte, raw bool, rawTok string) {
		if len(hdr)+len(claims)+len(sigBytes)+len(rawTok) > 8192 {
			t.Skip()
		}
		tok := rawTok
		choice := keyChoice % 7
		if !raw {
			input := b64(hdr) + "." + b64(claims)
			var alg string
			var h map[string]any
			if json.Unmarshal(hdr, &h) == nil {
				alg, _ = h["alg"].(string)
			}
			var key any
			switch choice {
			case 0, 4:
				key = hmacKey
			case 1:
				key = rsaKey
			case 2:
				key = ecKeys["ES256"]
			case 3:
				key = rsaPubPEM
			}
			sig := sigBytes
			if key != nil {
				if s, err := jwsbb.Sign(key, alg, []byte(input), rand.Reader); err == nil {
					sig = s
					if choice == 4 && len(sig) > 0 {
						sig = append([]byte(nil), sig...)
						sig[len(sig)/2] ^= 1
					}
				}
			}
			if choice == 5 {
				sig = nil
			}
			tok = input + "." + b64(sig)
		}
		ctx := fakeframework.NewContext("jwt-auth", bearer(tok))
		st := (&filter{rt: cfg.rt}).OnReceive(ctx, ctx.Req, nil, nil)
		if (st == api.Stop) != (ctx.Replied != nil) {
			t.Fatalf("status %v but reply %+v", st, ctx.Replied)
		}
		if st != api.Continue {
			if ctx.Replied.Code != 401 && ctx.Replied.Code != 503 {
				t.Fatalf("token %q refused with %d", tok, ctx.Replied.Code)
			}
			if len(tok) >= 16 && strings.Contains(ctx.Replied.Body, tok) {
				t.Fatalf("the refusal repeats the token: %q", ctx.Replied.Body)
			}
			return
		}
		if !raw && (choice == 3 || choice == 4 || choice == 5) {
			t.Fatalf("token %q (signing choice %d) accepted", tok, choice)
		}
		if h, _, why := referenceVerify(tok); why != "" {
			t.Fatalf("token %q accepted; the reference refuses it: %s (header %v)", tok, why, h)
		}
	})
}
