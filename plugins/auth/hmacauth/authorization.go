package hmacauth

import "strings"

// sigParams are the parameters of "Authorization: Signature ...".
type sigParams struct {
	keyID, algorithm, headers, signature string
}

// parseSignature parses the auth-params after the "Signature" scheme:
//
//	keyId="k1",algorithm="hmac-sha256",headers="@request-target date x-nonce",signature="<base64>"
//
// Values must be quoted strings without escapes (none of the defined values
// needs one); spaces around commas are allowed; unknown parameters are
// ignored (draft-cavage's created/expires); a repeated parameter is an error,
// since two keyIds or signatures are ambiguous. No allocation: the results
// are substrings of s.
func parseSignature(s string) (p sigParams, ok bool) {
	var seen uint8
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			break
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return p, false
		}
		name := strings.TrimRight(s[:eq], " \t")
		s = strings.TrimLeft(s[eq+1:], " \t")
		if len(s) < 2 || s[0] != '"' {
			return p, false
		}
		end := strings.IndexByte(s[1:], '"')
		if end < 0 {
			return p, false
		}
		val := s[1 : 1+end]
		if strings.IndexByte(val, '\\') >= 0 {
			return p, false
		}
		s = strings.TrimLeft(s[2+end:], " \t")
		if s != "" {
			if s[0] != ',' {
				return p, false
			}
			s = s[1:]
		}
		var bit uint8
		switch name {
		case "keyId":
			p.keyID, bit = val, 1
		case "algorithm":
			p.algorithm, bit = val, 2
		case "headers":
			p.headers, bit = val, 4
		case "signature":
			p.signature, bit = val, 8
		default:
			continue
		}
		if seen&bit != 0 {
			return p, false
		}
		seen |= bit
	}
	return p, p.keyID != "" && p.signature != "" && p.algorithm != ""
}

// signatureValue returns the parameters of a "Signature" Authorization
// header, "" if the scheme is another one.
func signatureValue(v string) (string, bool) {
	scheme, rest, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "signature") {
		return "", false
	}
	return rest, true
}
