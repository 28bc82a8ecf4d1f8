package secret_test

import (
	"testing"

	"github.com/moeproxy/moe/shared/secret"
)

func TestDigestIsAFunctionOfTheWholeSecret(t *testing.T) {
	seen := map[secret.Digest]string{}
	buf := make([]byte, 0, 65)
	for n := 0; n <= 64; n++ {
		for _, last := range []byte{'a', 'b'} {
			s := string(append(buf[:n:n], last))
			d := secret.DigestOf(s)
			if other, dup := seen[d]; dup {
				t.Fatalf("%q and %q have the same digest", s, other)
			}
			seen[d] = s
			if b := secret.DigestOfBytes([]byte(s)); !secret.EqualDigest(&d, &b) {
				t.Fatalf("DigestOf and DigestOfBytes differ for %q", s)
			}
			if again := secret.DigestOf(s); d != again {
				t.Fatalf("digest of %q changed between calls", s)
			}
		}
		buf = append(buf[:n], 'x')
	}
	if secret.DigestOf("") == (secret.Digest{}) {
		t.Fatal("digest of the empty secret is all zeros")
	}
}

func TestEqualDigest(t *testing.T) {
	a, b, c := secret.DigestOf("k1"), secret.DigestOf("k1"), secret.DigestOf("k2")
	if !secret.EqualDigest(&a, &b) || secret.EqualDigest(&a, &c) {
		t.Fatal("EqualDigest: same secret unequal or different secrets equal")
	}
}
