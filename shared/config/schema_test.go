package config_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/config"
)

func TestSchemaFollowsTheDecoder(t *testing.T) {
	s := config.Schema(&fieldsConfig{Burst: 10}, map[string]string{"rate": "requests per second", "rules[].match": "what to match"})
	b, _ := json.Marshal(s)
	js := string(b)
	for _, want := range []string{
		`"$schema":"https://json-schema.org/draft/2020-12/schema"`,
		`"additionalProperties":false`,
		`"rate":{"description":"requests per second","type":"number"}`,
		`"burst":{"default":10,"type":"integer"}`,
		`"hide_credentials":{"type":"boolean"}`,
		`"rules":{"items":{"additionalProperties":false,"properties":{"key":{"type":"string","x-moe-type":"template"},"match":{"description":"what to match","type":"string"}`,
		`"by":{"type":"string","x-moe-type":"variable"}`,
		`"backends":{"additionalProperties":{"additionalProperties":false`,
		`"raw":{}`,
	} {
		if !strings.Contains(js, want) {
			t.Errorf("schema lacks %s\n%s", want, js)
		}
	}
	if strings.Contains(js, `"Skipped"`) || strings.Contains(js, "internal") {
		t.Errorf("schema has fields the decoder skips: %s", js)
	}
}
