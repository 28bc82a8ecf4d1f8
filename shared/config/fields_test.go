package config_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/variables"
)

type common struct {
	Hide bool `json:"hide_credentials"`
}

type fieldsRule struct {
	Match   string              `json:"match"`
	Weights map[string]float64  `json:"weights"`
	Key     *variables.Template `json:"key"`
}

type fieldsConfig struct {
	common
	Rate     float64               `json:"rate"`
	Burst    int                   `json:"burst,omitempty"`
	Window   api.Duration          `json:"window"`
	By       variables.Var         `json:"by"`
	Rules    []fieldsRule          `json:"rules"`
	Backends map[string]fieldsRule `json:"backends"`
	Raw      json.RawMessage       `json:"raw"`
	Skipped  string                `json:"-"`
	internal int
}

func TestFieldsListsWhatUsersWrite(t *testing.T) {
	got := fmt.Sprint(config.Fields(&fieldsConfig{}))
	want := "[{hide_credentials bool} {rate number} {burst int} {window duration} {by variable} " +
		"{rules []object} {rules[].match string} {rules[].weights map[string]number} {rules[].key template} " +
		"{backends map[string]object} {backends.*.match string} {backends.*.weights map[string]number} {backends.*.key template} " +
		"{raw any}]"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}
