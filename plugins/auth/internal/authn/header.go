package authn

// SafeHeaderValue reports whether v can be sent as a header value as is: no
// CR, LF, NUL or other control characters (tab allowed), so a value taken from
// a credential or a token claim cannot inject headers or confuse parsers.
func SafeHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
