package authn

import (
	"errors"

	"github.com/moeproxy/moe/shared/api"
)

// Within puts err under field: a credential's Validate names its own fields
// ("keys[0]"); checked as entry consumers[2] of a plugin's own list the error
// must say "consumers[2].keys[0]", as the framework does for the chain's
// consumers ("consumers[2].auth.key-auth.keys[0]"). nil stays nil; an error
// that is not a *api.FieldError is named by field as a whole.
func Within(field string, err error) error {
	if err == nil {
		return nil
	}
	var fe *api.FieldError
	if errors.As(err, &fe) {
		if fe.Field == "" {
			return &api.FieldError{Field: field, Reason: fe.Reason}
		}
		return &api.FieldError{Field: api.Field(field, fe.Field), Reason: fe.Reason}
	}
	return &api.FieldError{Field: field, Reason: err.Error()}
}
