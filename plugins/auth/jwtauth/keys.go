package jwtauth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"strings"
	"sync"

	"github.com/lestrrat-go/jwx/v3/jwk"
)

// verifyKey is one key ready for the request path: the raw public key (or
// HMAC secret) and the algorithms it may verify, fixed at parse time.
type verifyKey struct {
	kid  string
	algs algSet
	raw  any // []byte, *rsa.PublicKey, *ecdsa.PublicKey or ed25519.PublicKey
	// macs pools HMAC hashers keyed with this secret, for SHA-256/384/512.
	macs [3]*sync.Pool
}

func newVerifyKey(kid string, algs algSet, raw any) verifyKey {
	k := verifyKey{kid: kid, algs: algs, raw: raw}
	if secret, ok := raw.([]byte); ok {
		for i, h := range []func() hash.Hash{sha256.New, sha512.New384, sha512.New} {
			k.macs[i] = &sync.Pool{New: func() any { return hmac.New(h, secret) }}
		}
	}
	return k
}

// keySet is an immutable list of keys; a JWKS refresh swaps in a new one.
type keySet struct {
	keys []verifyKey
}

// find returns the keys that may verify a token with this kid and alg. A token
// kid must match the key's kid when the key has one; keys without a kid match
// any token (RFC 7515 4.1.4 makes kid optional). The result aliases a small
// stack array in the common case.
func (s *keySet) find(kid string, alg algSet, dst []*verifyKey) []*verifyKey {
	if s == nil {
		return dst
	}
	for i := range s.keys {
		k := &s.keys[i]
		if k.algs&alg == 0 {
			continue
		}
		if kid != "" && k.kid != "" && k.kid != kid {
			continue
		}
		dst = append(dst, k)
	}
	return dst
}

// hasKid reports whether some key has this kid (to tell "unknown kid", which
// triggers a JWKS refresh, from "known kid, wrong alg").
func (s *keySet) hasKid(kid string) bool {
	if s == nil {
		return false
	}
	for i := range s.keys {
		if s.keys[i].kid == kid {
			return true
		}
	}
	return false
}

// KeyConfig is one inline key: exactly one of secret, secret_base64, pem, jwk.
type KeyConfig struct {
	// KID is matched against the token's "kid" header (optional).
	KID string `json:"kid,omitempty"`
	// Alg restricts the key to one algorithm (default: all the key type allows).
	Alg string `json:"alg,omitempty"`
	// Secret is an HMAC secret as text (HS*).
	Secret string `json:"secret,omitempty"`
	// SecretBase64 is an HMAC secret in base64 (standard or URL alphabet).
	SecretBase64 string `json:"secret_base64,omitempty"`
	// PEM is a public key (PKIX "PUBLIC KEY", "RSA PUBLIC KEY", a certificate)
	// or a private key, whose public part is used.
	PEM string `json:"pem,omitempty"`
	// JWK is a JSON Web Key, as an object or a JSON string.
	JWK json.RawMessage `json:"jwk,omitempty"`
}

func (kc *KeyConfig) parse(allowed algSet) (verifyKey, error) {
	n := 0
	for _, set := range []bool{kc.Secret != "", kc.SecretBase64 != "", kc.PEM != "", len(kc.JWK) > 0} {
		if set {
			n++
		}
	}
	if n != 1 {
		return verifyKey{}, fieldErr("", "exactly one of secret, secret_base64, pem, jwk is required (got %d)", n)
	}
	vk := verifyKey{kid: kc.KID}
	switch {
	case kc.Secret != "":
		vk.raw = []byte(kc.Secret)
	case kc.SecretBase64 != "":
		b, err := decodeBase64Any(kc.SecretBase64)
		if err != nil {
			return vk, fieldErr("secret_base64", "not base64: %v", err)
		}
		vk.raw = b
	case kc.PEM != "":
		k, err := jwk.ParseKey([]byte(kc.PEM), jwk.WithPEM(true))
		if err != nil {
			return vk, fieldErr("pem", "cannot parse PEM key: %v", err)
		}
		raw, _, _, err := fromJWK(k)
		if err != nil {
			return vk, fieldErr("pem", "%v", err)
		}
		vk.raw = raw
	default:
		data := []byte(kc.JWK)
		var s string
		if json.Unmarshal(data, &s) == nil {
			data = []byte(s)
		}
		k, err := jwk.ParseKey(data)
		if err != nil {
			return vk, fieldErr("jwk", "cannot parse JWK: %v", err)
		}
		raw, kid, jalg, err := fromJWK(k)
		if err != nil {
			return vk, fieldErr("jwk", "%v", err)
		}
		vk.raw = raw
		if vk.kid == "" {
			vk.kid = kid
		}
		if kc.Alg == "" {
			kc.Alg = jalg
		}
	}
	algs, err := algsForKey(vk.raw)
	if err != nil {
		return vk, fieldErr("", "%v", err)
	}
	if kc.Alg != "" {
		b := algBit(kc.Alg)
		if b == 0 || algs&b == 0 {
			return vk, fieldErr("alg", "%q cannot be used with this key (the key allows %s)", kc.Alg, algs)
		}
		algs = b
	}
	if algs&allowed == 0 {
		return vk, fieldErr("", "the key allows %s, none of which is in algorithms (%s)", algs, allowed)
	}
	return newVerifyKey(vk.kid, algs&allowed, vk.raw), nil
}

// fromJWK exports a jwx key to a raw public key (or HMAC secret), with its kid
// and alg. Private keys are reduced to their public part.
func fromJWK(k jwk.Key) (raw any, kid, alg string, err error) {
	if u, ok := k.KeyUsage(); ok && u == "enc" {
		return nil, "", "", errors.New(`key "use" is "enc", not "sig"`)
	}
	if err := jwk.Export(k, &raw); err != nil {
		return nil, "", "", fmt.Errorf("cannot export key: %w", err)
	}
	switch p := raw.(type) {
	case *rsa.PrivateKey:
		raw = &p.PublicKey
	case *ecdsa.PrivateKey:
		raw = &p.PublicKey
	case ed25519.PrivateKey:
		raw = p.Public().(ed25519.PublicKey)
	}
	kid, _ = k.KeyID()
	if a, ok := k.Algorithm(); ok {
		alg = a.String()
	}
	return raw, kid, alg, nil
}

// parseJWKS parses a JWK Set. Keys that cannot be used (unsupported type,
// "use": "enc", an alg outside allowed, too weak) are skipped and reported in
// skipped, so one odd key published by an identity provider does not make the
// whole set unusable. An empty result is an error.
func parseJWKS(data []byte, allowed algSet) (ks *keySet, skipped []string, err error) {
	set, err := jwk.Parse(data, jwk.WithIgnoreParseError(true))
	if err != nil {
		return nil, nil, fmt.Errorf("parsing JWKS: %w", err)
	}
	ks = &keySet{}
	for i := 0; i < set.Len(); i++ {
		k, _ := set.Key(i)
		raw, kid, alg, err := fromJWK(k)
		if err == nil {
			var algs algSet
			if algs, err = algsForKey(raw); err == nil {
				if alg != "" {
					if b := algBit(alg); b == 0 || algs&b == 0 {
						err = fmt.Errorf("alg %q does not fit the key", alg)
					} else {
						algs = b
					}
				}
				if err == nil && algs&allowed == 0 {
					err = fmt.Errorf("alg %s not in algorithms", algs)
				}
				if err == nil {
					ks.keys = append(ks.keys, newVerifyKey(kid, algs&allowed, raw))
					continue
				}
			}
		}
		skipped = append(skipped, fmt.Sprintf("key %d (kid %q): %v", i, kid, err))
	}
	if len(ks.keys) == 0 {
		return nil, skipped, fmt.Errorf("JWKS has no usable key (%d keys; %s)", set.Len(), strings.Join(skipped, "; "))
	}
	return ks, skipped, nil
}

func decodeBase64Any(s string) ([]byte, error) {
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}
