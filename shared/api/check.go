package api

import (
	"cmp"
	"fmt"
	"strings"
)

// CheckRange returns a *FieldError for field unless min <= v <= max:
//
//	if err := api.CheckRange("max_key_bytes", c.MaxKeyBytes, 8, 16384); err != nil {
//		return err
//	}
func CheckRange[T cmp.Ordered](field string, v, min, max T) error {
	if !(v >= min && v <= max) { // written so that NaN is refused too
		return FieldErrorf(field, "must be between %v and %v, got %v", min, max, v)
	}
	return nil
}

// CheckAbove returns a *FieldError for field unless v > min (a rate or a
// ratio that must be positive: CheckAbove("rate", c.Rate, 0)).
func CheckAbove[T cmp.Ordered](field string, v, min T) error {
	if !(v > min) {
		return FieldErrorf(field, "must be greater than %v, got %v", min, v)
	}
	return nil
}

// CheckMin returns a *FieldError for field unless v >= min.
func CheckMin[T cmp.Ordered](field string, v, min T) error {
	if !(v >= min) {
		return FieldErrorf(field, "must be at least %v, got %v", min, v)
	}
	return nil
}

// CheckOneOf returns a *FieldError for field unless v is one of allowed.
func CheckOneOf(field, v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return FieldErrorf(field, "must be one of %s, got %q", strings.Join(allowed, ", "), v)
}

// CheckStatus returns a *FieldError for field unless code is an HTTP status a
// gateway may answer with when it refuses a request (400..599).
func CheckStatus(field string, code int) error {
	if code < 400 || code > 599 {
		return FieldErrorf(field, "must be a 4xx or 5xx status, got %d", code)
	}
	return nil
}

// Field joins config path parts: Field("rules", 2, "key") is "rules[2].key".
func Field(parts ...any) string {
	var b strings.Builder
	for _, p := range parts {
		switch v := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", v)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, v)
		}
	}
	return b.String()
}
