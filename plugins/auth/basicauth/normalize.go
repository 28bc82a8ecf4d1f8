package basicauth

import (
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// nfc returns b in Unicode Normalization Form C. RFC 7617 (charset="UTF-8")
// refers to the PRECIS profiles of RFC 8265, which normalise user names and
// passwords to NFC: "é" typed as e + combining accent (macOS input methods, some
// clients) must match "é" in config. ASCII and already-normal input, i.e.
// nearly every request, is returned as is without allocating.
func nfc(b []byte) []byte {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			// Copy first: handing b to norm would move the caller's stack buffer
			// to the heap for every request, ASCII ones included.
			h := append([]byte(nil), b...)
			if norm.NFC.IsNormal(h) {
				return h
			}
			return norm.NFC.Bytes(h)
		}
	}
	return b
}

// nfcString is nfc for config values.
func nfcString(s string) string { return norm.NFC.String(s) }
