package authn

import "crypto/subtle"

// Equal compares two secrets in time that depends only on their lengths.
func Equal(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
