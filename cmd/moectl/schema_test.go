package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"

	"github.com/moeproxy/moe/plugins/all"
	"github.com/moeproxy/moe/shared/registry"
)

func schemaFor(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run([]string{"schema", name}, &out, &errb); code != 0 {
		t.Fatalf("moectl schema %s: %d %s", name, code, errb.String())
	}
	doc, err := jsonschema.UnmarshalJSON(&out)
	if err != nil {
		t.Fatalf("schema of %s is not JSON: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name+".json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name + ".json")
	if err != nil {
		t.Fatalf("schema of %s does not compile: %v", name, err)
	}
	return s
}

// Every plugin config of the documented examples is valid against its
// plugin's schema, and an unknown field is not: the schema follows the
// decoder.
func TestSchemasAcceptTheExamplesAndRefuseUnknownFields(t *testing.T) {
	schemas := map[string]*jsonschema.Schema{}
	for _, name := range registry.Names() {
		schemas[name] = schemaFor(t, name)
	}
	files, _ := filepath.Glob("../../envoy/examples/*.yaml")
	files = append(files, "../../envoy/envoy.yaml")
	checked := map[string]int{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		walkPluginConfigs(doc, func(name string, cfg any) {
			s, ok := schemas[name]
			if !ok {
				return
			}
			// JSON round trip: numbers as json.Number-compatible values.
			b, _ := json.Marshal(cfg)
			v, _ := jsonschema.UnmarshalJSON(bytes.NewReader(b))
			if err := s.Validate(v); err != nil {
				t.Errorf("%s: %s config %s: %v", f, name, b, err)
			}
			checked[name]++
		})
	}
	for _, name := range registry.Names() {
		if checked[name] == 0 {
			t.Errorf("no example config of %s was checked against its schema", name)
		}
	}
	bad, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"rate": 5, "ratee": 1}`))
	if err := schemas["limit-req"].Validate(bad); err == nil {
		t.Error("limit-req's schema accepted an unknown field")
	}
}

// walkPluginConfigs calls fn for each {name, config} entry of a moe plugin
// list anywhere in a bootstrap.
func walkPluginConfigs(v any, fn func(name string, cfg any)) {
	switch x := v.(type) {
	case map[string]any:
		if list, ok := x["plugins"].([]any); ok {
			for _, e := range list {
				if m, ok := e.(map[string]any); ok {
					if name, ok := m["name"].(string); ok {
						if cfg, ok := m["config"]; ok {
							fn(name, cfg)
						}
					}
				}
			}
		}
		for _, c := range x {
			walkPluginConfigs(c, fn)
		}
	case []any:
		for _, c := range x {
			walkPluginConfigs(c, fn)
		}
	}
}

func TestPluginsListsAndDescribes(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"plugins"}, &out, &errb); code != 0 {
		t.Fatalf("%d %s", code, errb.String())
	}
	for _, e := range all.Catalog {
		if !strings.Contains(out.String(), e.Name) {
			t.Errorf("moectl plugins lacks %s", e.Name)
		}
	}
	out.Reset()
	if code := run([]string{"plugins", "key-auth"}, &out, &errb); code != 0 {
		t.Fatalf("%d %s", code, errb.String())
	}
	for _, want := range []string{"phase:", "like:", "sources", "consumer credential (consumers[].auth.key-auth)", "keys"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("moectl plugins key-auth lacks %q:\n%s", want, out.String())
		}
	}
	if code := run([]string{"plugins", "nope"}, &out, &errb); code != exitProblems || !strings.Contains(errb.String(), `unknown plugin "nope"`) {
		t.Errorf("unknown plugin: %d %q", code, errb.String())
	}
}
