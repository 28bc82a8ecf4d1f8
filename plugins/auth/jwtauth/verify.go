package jwtauth

import (
	"crypto/hmac"
	"encoding/base64"
	"errors"
	"hash"
	"strings"
	"sync"
	"unsafe"

	"github.com/lestrrat-go/jwx/v3/jws/jwsbb"
	"github.com/valyala/fastjson"

	"github.com/moeproxy/moe/shared/consumer"
)

// Signature checks use jwx's jwsbb building blocks (the layer its own jws
// package verifies with) on a token we split and decode ourselves: the
// high-level jws.Verify builds a full message object per call, which costs
// several times more allocations on this hot path. HMAC is checked with the
// standard library and pooled hashers (hmac.New per request is 4 allocations).
// Key/algorithm binding is ours (algsForKey), never taken from the token.
//
// JSON (header and claims) is read with valyala/fastjson, which jwx itself
// uses for JWS headers: it parses without reflection into a reusable parser,
// where encoding/json costs a dozen allocations per token.

// scratch is per-request decode space, pooled so a verification allocates
// next to nothing.
type scratch struct {
	buf    []byte
	keys   [4]*verifyKey
	parser fastjson.Parser
}

var scratchPool = sync.Pool{New: func() any { return &scratch{buf: make([]byte, 0, 2048)} }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func putScratch(sc *scratch) {
	sc.keys = [4]*verifyKey{}
	if cap(sc.buf) <= 64<<10 {
		scratchPool.Put(sc)
	}
}

const maxHeaderSegment = 1024 // encoded JOSE header bytes; real ones are < 200

// wellFormed checks the compact serialization's alphabet and returns the dot
// positions. Go's base64 decoder skips CR/LF, so the alphabet is checked
// first: a token is three base64url segments and nothing else. The signature
// may be empty: an unsecured JWT ("alg":"none", RFC 7519 6.1) is then refused
// for its algorithm, any other for its signature.
func wellFormed(tok string) (d1, d2 int, ok bool) {
	d1, d2 = -1, -1
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case c == '.':
			if d1 < 0 {
				d1 = i
			} else if d2 < 0 {
				d2 = i
			} else {
				return 0, 0, false
			}
		case ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') || c == '-' || c == '_':
		default:
			return 0, 0, false
		}
	}
	return d1, d2, d1 > 0 && d2 > d1+1
}

func decodeSeg(dst []byte, seg string) ([]byte, error) {
	n := base64.RawURLEncoding.DecodedLen(len(seg))
	start := len(dst)
	dst = append(dst, make([]byte, n)...)
	// Decode only reads src: viewing the string's bytes avoids a copy per segment.
	m, err := base64.RawURLEncoding.Decode(dst[start:], unsafe.Slice(unsafe.StringData(seg), len(seg)))
	return dst[:start+m], err
}

// verify checks a compact JWS token and returns its claims, which live in
// sc until it is put back. It never waits: JWKS keys come from an atomic
// snapshot, and an unknown kid only asks the refresher for an early fetch.
func (rt *runtime) verify(tok string, sc *scratch) (*fastjson.Value, reason, bool) {
	if len(tok) > rt.maxToken {
		return nil, rTooLarge, false
	}
	d1, d2, ok := wellFormed(tok)
	if !ok || d1 > maxHeaderSegment {
		return nil, rMalformed, false
	}
	buf, err := decodeSeg(sc.buf[:0], tok[:d1])
	if err != nil {
		return nil, rMalformed, false
	}
	hdr, err := parseObject(&sc.parser, buf)
	if err != nil {
		return nil, rMalformed, false
	}
	// RFC 7515 4.1.11: extensions we do not understand must be rejected.
	if hdr.Exists("crit") {
		return nil, rMalformed, false
	}
	bit := algBit(string(hdr.GetStringBytes("alg"))) // 0 for "none" and anything unknown
	if bit == 0 || bit&rt.allowed == 0 {
		return nil, rAlg, false
	}
	alg := bit.name() // a constant string, not parser memory
	kidV := hdr.Get("kid")
	if kidV != nil && kidV.Type() != fastjson.TypeString {
		return nil, rMalformed, false
	}
	kid := string(hdr.GetStringBytes("kid")) // small copy; the parser is reused below

	keys := rt.static.find(kid, bit, sc.keys[:0])
	var remote *keySet
	if rt.jwks != nil {
		remote = rt.jwks.keys()
		keys = remote.find(kid, bit, keys)
	}
	if len(keys) == 0 {
		if rt.jwks != nil && remote == nil {
			return nil, rJWKSUnavailable, false
		}
		if kid != "" && !rt.static.hasKid(kid) && !remote.hasKid(kid) {
			if rt.jwks != nil {
				rt.refreshes.Inc(1)
				rt.jwks.requestRefresh()
			}
			return nil, rUnknownKid, false
		}
		if rt.static == nil && remote == nil {
			return nil, rJWKSUnavailable, false // a route config without any key source
		}
		return nil, rAlg, false
	}

	if d2 == len(tok)-1 {
		return nil, rSignature, false // empty signature
	}

	// Signing input, signature and payload, decoded into the scratch buffer.
	buf = append(buf[:0], tok[:d2]...)
	inputLen := len(buf)
	if buf, err = decodeSeg(buf, tok[d2+1:]); err != nil {
		sc.buf = buf
		return nil, rMalformed, false
	}
	sigEnd := len(buf)
	buf = append(buf, make([]byte, 64)...) // room for an HMAC sum
	sc.buf = buf
	input, sig, sum := buf[:inputLen], buf[inputLen:sigEnd], buf[sigEnd:sigEnd]
	good := false
	for _, k := range keys {
		if k.verify(bit, alg, input, sig, sum) {
			good = true
			break
		}
	}
	if !good {
		return nil, rSignature, false
	}

	buf, err = decodeSeg(buf[:0], tok[d1+1:d2])
	sc.buf = buf
	if err != nil {
		return nil, rMalformed, false
	}
	cl, err := parseObject(&sc.parser, buf)
	if err != nil {
		return nil, rMalformed, false
	}
	if r, ok := rt.checkClaims(cl); !ok {
		return nil, r, false
	}
	return cl, 0, true
}

var errNotObject = errors.New("not a JSON object")

// parseObject parses a JOSE header or a claims set: strict JSON (fastjson's
// parser alone accepts control characters inside strings, which RFC 8259
// and every other parser refuse) holding an object.
func parseObject(p *fastjson.Parser, b []byte) (*fastjson.Value, error) {
	if err := fastjson.ValidateBytes(b); err != nil {
		return nil, err
	}
	v, err := p.ParseBytes(b)
	if err != nil {
		return nil, err
	}
	if v.Type() != fastjson.TypeObject {
		return nil, errNotObject
	}
	return v, nil
}

// verify checks one signature with this key.
func (k *verifyKey) verify(bit algSet, alg string, input, sig, sum []byte) bool {
	if bit&algsHMAC != 0 {
		i := 0
		if bit == algHS384 {
			i = 1
		} else if bit == algHS512 {
			i = 2
		}
		h := k.macs[i].Get().(hash.Hash)
		h.Reset()
		h.Write(input)
		ok := hmac.Equal(h.Sum(sum), sig) // constant time
		k.macs[i].Put(h)
		return ok
	}
	return jwsbb.Verify(k.raw, alg, input, sig) == nil
}

// numericDate reads an optional NumericDate claim (RFC 7519 2: seconds, maybe
// fractional). A present non-number is malformed.
func numericDate(cl *fastjson.Value, name string) (v float64, set, ok bool) {
	x := cl.Get(name)
	if x == nil || x.Type() == fastjson.TypeNull {
		return 0, false, true
	}
	f, err := x.Float64()
	if err != nil {
		return 0, false, false
	}
	return f, true, true
}

func (rt *runtime) checkClaims(cl *fastjson.Value) (reason, bool) {
	exp, expSet, ok1 := numericDate(cl, "exp")
	nbf, nbfSet, ok2 := numericDate(cl, "nbf")
	iat, iatSet, ok3 := numericDate(cl, "iat")
	if !ok1 || !ok2 || !ok3 {
		return rMalformed, false
	}
	nowS := float64(rt.now().UnixNano()) / 1e9
	leeway := rt.leeway.Seconds()
	if expSet {
		// RFC 7519 4.1.4: not accepted on or after exp.
		if nowS-leeway >= exp {
			return rExpired, false
		}
	} else if rt.requireExp {
		return rMissingExp, false
	}
	if nbfSet && nowS+leeway < nbf {
		return rNotYetValid, false
	}
	if iatSet && iat > nowS+leeway {
		return rIssuedInFuture, false
	}
	if len(rt.issuers) > 0 && !containsBytes(rt.issuers, cl.GetStringBytes("iss")) {
		return rIssuer, false
	}
	if len(rt.audiences) > 0 {
		ok := false
		aud := cl.Get("aud")
		switch {
		case aud == nil:
		case aud.Type() == fastjson.TypeString:
			b, _ := aud.StringBytes()
			ok = containsBytes(rt.audiences, b)
		case aud.Type() == fastjson.TypeArray:
			arr, _ := aud.Array()
			for _, a := range arr {
				if b, err := a.StringBytes(); err == nil && containsBytes(rt.audiences, b) {
					ok = true
					break
				}
			}
		}
		if !ok {
			return rAudience, false
		}
	}
	return 0, true
}

func containsBytes(list []string, b []byte) bool {
	for _, v := range list {
		if v == string(b) { // no allocation for the comparison
			return true
		}
	}
	return false
}

// claimValue renders a claim for a header: strings as is, lists of strings
// joined by ",", anything else as compact JSON. Values with control characters
// (CR/LF header injection) are refused. path is the claim name split at dots;
// a top-level claim whose name contains dots is found too.
func claimValue(cl *fastjson.Value, path []string, full string) (string, bool) {
	v := cl.Get(full)
	if v == nil && len(path) > 1 {
		v = cl.Get(path...)
	}
	if v == nil {
		return "", false
	}
	var s string
	switch v.Type() {
	case fastjson.TypeNull:
		return "", false
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		s = string(b)
	case fastjson.TypeArray:
		arr, _ := v.Array()
		parts := make([]string, 0, len(arr))
		for _, a := range arr {
			b, err := a.StringBytes()
			if err != nil {
				parts = nil
				break
			}
			parts = append(parts, string(b))
		}
		if parts != nil {
			s = strings.Join(parts, ",")
			break
		}
		s = string(v.MarshalTo(nil))
	default:
		s = string(v.MarshalTo(nil))
	}
	if s == "" || !consumer.SafeHeaderValue(s) {
		return "", false
	}
	return s, true
}
