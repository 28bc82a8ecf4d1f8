package jwtauth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"fmt"
	"strings"
)

// algSet is a set of JWS algorithms as a bitmask, so the request path checks
// "may this key verify this alg" with one AND.
type algSet uint16

const (
	algHS256 algSet = 1 << iota
	algHS384
	algHS512
	algRS256
	algRS384
	algRS512
	algPS256
	algPS384
	algPS512
	algES256
	algES384
	algES512
	algEdDSA
)

var algNames = []struct {
	name string
	bit  algSet
}{
	{"HS256", algHS256}, {"HS384", algHS384}, {"HS512", algHS512},
	{"RS256", algRS256}, {"RS384", algRS384}, {"RS512", algRS512},
	{"PS256", algPS256}, {"PS384", algPS384}, {"PS512", algPS512},
	{"ES256", algES256}, {"ES384", algES384}, {"ES512", algES512},
	{"EdDSA", algEdDSA},
}

const (
	algsHMAC  = algHS256 | algHS384 | algHS512
	algsRSA   = algRS256 | algRS384 | algRS512 | algPS256 | algPS384 | algPS512
	algsAll   = algsHMAC | algsRSA | algES256 | algES384 | algES512 | algEdDSA
	supported = "HS256, HS384, HS512, RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA"
)

// algBit maps a JWS "alg" to its bit; 0 for "none" and anything unsupported.
// A switch, not a map: it is on the request path.
func algBit(alg string) algSet {
	switch alg {
	case "HS256":
		return algHS256
	case "HS384":
		return algHS384
	case "HS512":
		return algHS512
	case "RS256":
		return algRS256
	case "RS384":
		return algRS384
	case "RS512":
		return algRS512
	case "PS256":
		return algPS256
	case "PS384":
		return algPS384
	case "PS512":
		return algPS512
	case "ES256":
		return algES256
	case "ES384":
		return algES384
	case "ES512":
		return algES512
	case "EdDSA":
		return algEdDSA
	}
	return 0
}

// name is the JWS name of a single-bit set, as a constant string.
func (s algSet) name() string {
	for _, a := range algNames {
		if a.bit == s {
			return a.name
		}
	}
	return ""
}

func parseAlgs(names []string, field string) (algSet, error) {
	var s algSet
	for i, n := range names {
		b := algBit(n)
		if b == 0 {
			return 0, fieldErr(fmt.Sprintf("%s[%d]", field, i), "unsupported algorithm %q (supported: %s; \"none\" is never accepted)", n, supported)
		}
		s |= b
	}
	return s, nil
}

func (s algSet) String() string {
	var out []string
	for _, a := range algNames {
		if s&a.bit != 0 {
			out = append(out, a.name)
		}
	}
	return strings.Join(out, ",")
}

// algsForKey is what a key may verify, derived from the key itself: the token
// header never widens it (no algorithm confusion: an RSA public key is never
// an HMAC secret). HMAC secrets must be at least as long as the hash (RFC 7518
// section 3.2).
func algsForKey(raw any) (algSet, error) {
	switch k := raw.(type) {
	case []byte:
		switch {
		case len(k) >= 64:
			return algsHMAC, nil
		case len(k) >= 48:
			return algHS256 | algHS384, nil
		case len(k) >= 32:
			return algHS256, nil
		}
		return 0, fmt.Errorf("HMAC secret of %d bytes is too short (at least 32 bytes for HS256, RFC 7518 3.2)", len(k))
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return 0, fmt.Errorf("RSA key of %d bits is too small (at least 2048)", k.N.BitLen())
		}
		return algsRSA, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return algES256, nil
		case elliptic.P384():
			return algES384, nil
		case elliptic.P521():
			return algES512, nil
		}
		return 0, fmt.Errorf("unsupported EC curve %s", k.Curve.Params().Name)
	case ed25519.PublicKey:
		return algEdDSA, nil
	}
	return 0, fmt.Errorf("unsupported key type %T", raw)
}
