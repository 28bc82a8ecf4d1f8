package api_test

import (
	"math"
	"testing"

	"github.com/moeproxy/moe/shared/api"
)

func TestCheckHelpersNameTheFieldAndTheBounds(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string // "" = no error
	}{
		{"in range", api.CheckRange("n", 5, 1, 10), ""},
		{"at bounds", api.CheckRange("n", 10, 1, 10), ""},
		{"below", api.CheckRange("n", 0, 1, 10), "n: must be between 1 and 10, got 0"},
		{"float above", api.CheckRange("ratio", 1.5, 0.0, 1.0), "ratio: must be between 0 and 1, got 1.5"},
		{"NaN", api.CheckRange("ratio", math.NaN(), 0.0, 1.0), "ratio: must be between 0 and 1, got NaN"},
		{"above ok", api.CheckAbove("rate", 0.5, 0.0), ""},
		{"above", api.CheckAbove("rate", 0.0, 0.0), "rate: must be greater than 0, got 0"},
		{"min ok", api.CheckMin("burst", 1, 1), ""},
		{"min", api.CheckMin("burst", 0, 1), "burst: must be at least 1, got 0"},
		{"enum ok", api.CheckOneOf("mode", "reject", "shared", "reject"), ""},
		{"enum", api.CheckOneOf("mode", "x", "shared", "reject"), `mode: must be one of shared, reject, got "x"`},
		{"status ok", api.CheckStatus("status", 429), ""},
		{"status", api.CheckStatus("status", 200), "status: must be a 4xx or 5xx status, got 200"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.want == "" {
				if tc.err != nil {
					t.Fatalf("unexpected %v", tc.err)
				}
				return
			}
			if _, ok := tc.err.(*api.FieldError); !ok || tc.err.Error() != tc.want {
				t.Fatalf("got %v, want %q", tc.err, tc.want)
			}
		})
	}
	if got := api.Field("rules", 2, "match", "headers", 0); got != "rules[2].match.headers[0]" {
		t.Fatalf("Field = %q", got)
	}
}
