package hmacauth

import (
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/base64"
	"strings"

	"github.com/moeproxy/moe/shared/api"
)

// checkBody verifies the request body against a signed digest header:
// "Content-Digest: sha-256=:<b64>:" (RFC 9530) or "Digest: SHA-256=<b64>"
// (RFC 3230), sha-512 accepted too. A request with a body needs one; a
// request without a body passes unless it carries a digest that does not
// match the empty body.
func checkBody(h api.RequestHeaderMap, signedList string, body api.Buffer) bool {
	var data []byte
	if body != nil {
		data = body.Bytes()
	}
	for _, name := range [...]string{"content-digest", "digest"} {
		vs := h.Values(name)
		if len(vs) == 0 {
			continue
		}
		if !listed(signedList, name) {
			return false // an unsigned digest proves nothing
		}
		return digestMatches(name, strings.Join(vs, ","), data)
	}
	return len(data) == 0
}

// digestMatches checks every sha-256/sha-512 member of the header; at least
// one must be present and all present ones must match. Other algorithms are
// ignored (RFC 3230 lets a sender list several).
func digestMatches(header, v string, data []byte) bool {
	checked := false
	for _, member := range strings.Split(v, ",") {
		alg, val, ok := strings.Cut(strings.TrimSpace(member), "=")
		if !ok {
			return false
		}
		if header == "content-digest" {
			if len(val) < 2 || val[0] != ':' || val[len(val)-1] != ':' {
				return false
			}
			val = val[1 : len(val)-1]
		}
		var sum []byte
		switch strings.ToLower(alg) {
		case "sha-256":
			s := sha256.Sum256(data)
			sum = s[:]
		case "sha-512":
			s := sha512.Sum512(data)
			sum = s[:]
		default:
			continue
		}
		got, err := base64.StdEncoding.DecodeString(val)
		if err != nil || subtle.ConstantTimeCompare(got, sum) != 1 {
			return false
		}
		checked = true
	}
	return checked
}
