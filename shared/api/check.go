package api

import (
	"cmp"
	"errors"
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

// Within puts err under field: a check that names its own fields ("keys[0]")
// run for entry consumers[2] must say "consumers[2].keys[0]". nil stays nil;
// an error that is not a *FieldError is named by field as a whole.
func Within(field string, err error) error {
	if err == nil {
		return nil
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		if fe.Field == "" {
			return &FieldError{Field: field, Reason: fe.Reason}
		}
		if strings.HasPrefix(fe.Field, "[") {
			return &FieldError{Field: field + fe.Field, Reason: fe.Reason}
		}
		return &FieldError{Field: field + "." + fe.Field, Reason: fe.Reason}
	}
	return &FieldError{Field: field, Reason: err.Error()}
}

// ValidHeaderName reports whether s is an HTTP header name a config may name:
// an RFC 9110 token (so not a pseudo-header such as ":path").
func ValidHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// CheckHeaderName returns a *FieldError for field unless name is a valid
// header name.
func CheckHeaderName(field, name string) error {
	if !ValidHeaderName(name) {
		return FieldErrorf(field, "%q is not a valid header name", name)
	}
	return nil
}
