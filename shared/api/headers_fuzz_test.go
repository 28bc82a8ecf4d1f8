package api

import "testing"

func FuzzLowerKeyIsTheByteLoop(f *testing.F) {
	for _, s := range []string{"", "x-api-key", "X-API-KEY", "\xc1\xda\xdb\x40\x5b", "abcdefghIjklmnop"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := LowerKey(s), lowerKeyByteByByte(s); got != want {
			t.Fatalf("LowerKey(%q) = %q, want %q", s, got, want)
		}
	})
}
