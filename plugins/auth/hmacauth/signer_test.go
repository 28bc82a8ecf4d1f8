package hmacauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"strings"
)

// clientSign is an independent client-side implementation of the signing
// scheme, written from the README and not sharing code with the plugin: it
// builds the signing string with strings.Join and formats the header with
// fmt, as a client library would.
func clientSign(keyID, secret, alg, method, path string, headers [][2]string, list []string) string {
	values := map[string][]string{}
	for _, kv := range headers {
		values[strings.ToLower(kv[0])] = append(values[strings.ToLower(kv[0])], strings.TrimSpace(kv[1]))
	}
	lines := make([]string, 0, len(list))
	for _, name := range list {
		switch name {
		case "@request-target", "(request-target)":
			lines = append(lines, fmt.Sprintf("%s: %s %s", name, strings.ToLower(method), path))
		default:
			lines = append(lines, fmt.Sprintf("%s: %s", name, strings.Join(values[name], ", ")))
		}
	}
	var h func() hash.Hash = sha256.New
	if alg == "hmac-sha512" {
		h = sha512.New
	}
	mac := hmac.New(h, []byte(secret))
	mac.Write([]byte(strings.Join(lines, "\n")))
	sig := base64.StdEncoding.EncodeToString(mac.Sum(nil))
	return fmt.Sprintf(`Signature keyId="%s",algorithm="%s",headers="%s",signature="%s"`,
		keyID, alg, strings.Join(list, " "), sig)
}
