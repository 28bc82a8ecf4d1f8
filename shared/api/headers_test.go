package api

import (
	"strings"
	"testing"
)

// lowerKeyByteByByte is LowerKey's definition, one byte at a time.
func lowerKeyByteByByte(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

func TestLowerKeyLowersOnlyNamesWithUpperCaseASCII(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"x", "x"},
		{"X", "x"},
		{":method", ":method"},
		{"x-api-key", "x-api-key"},
		{"X-Api-Key", "x-api-key"},
		{"x-consumer-namE", "x-consumer-name"}, // upper case only in the overlapping last word
		{"Content-Type-Extra", "content-type-extra"},
		{"x-\u00c4rger", "x-\u00c4rger"}, // no upper-case ASCII: left as it is
	} {
		if got := LowerKey(tc.in); got != tc.want {
			t.Errorf("LowerKey(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Every byte value at every position of names 1 to 24 bytes long: LowerKey
// must agree with the byte loop, including bytes with bit 7 set whose
// low seven bits are upper-case letters (0xc1 is 'A'|0x80) and the neighbours
// of 'A' and 'Z'.
func TestLowerKeyAgreesWithTheByteLoopForEveryByte(t *testing.T) {
	for n := 1; n <= 24; n++ {
		for pos := 0; pos < n; pos++ {
			b := []byte(strings.Repeat("a", n))
			for c := 0; c < 256; c++ {
				b[pos] = byte(c)
				s := string(b)
				if got, want := LowerKey(s), lowerKeyByteByByte(s); got != want {
					t.Fatalf("LowerKey(%q) = %q, want %q", s, got, want)
				}
			}
		}
	}
}

func BenchmarkLowerKey(b *testing.B) {
	for _, k := range []string{":method", "x-api-key", "x-consumer-name", "x-forwarded-client-cert"} {
		b.Run(k, func(b *testing.B) {
			for b.Loop() {
				sinkKey = LowerKey(k)
			}
		})
		b.Run(k+"/byte-loop", func(b *testing.B) {
			for b.Loop() {
				sinkKey = lowerKeyByteByByte(k)
			}
		})
	}
}

var sinkKey string
