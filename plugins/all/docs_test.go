package all

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/config"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// The README of every plugin follows plugins/README.md: the required
// sections in order, an attributes table, and a configuration table (and,
// for auth plugins, a consumer credential table) that matches the Go config
// type field for field and type for type. This is the docs linter: a README
// cannot drift from the code.

var requiredSections = []string{"Attributes", "Configuration", "Example", "Metrics", "Failure behaviour", "Cost"}

var requiredAttributes = []string{"phase", "may block", "body", "order", "like"}

const configHeader = "| field | type | default | required | validation | description |"

func TestEveryPluginREADMEMatchesItsConfig(t *testing.T) {
	root := hosttest.RepoRoot(t)
	readmes, err := findREADMEs(filepath.Join(root, "plugins"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range registry.Names() {
		t.Run(name, func(t *testing.T) {
			path, ok := readmes[name]
			if !ok {
				t.Fatalf("no README.md under plugins/ starts with %q", "# "+name)
			}
			p, _ := registry.Get(name)
			doc, err := readREADME(path)
			if err != nil {
				t.Fatal(err)
			}
			checkSections(t, doc)
			checkAttributes(t, doc)
			var fields []config.FieldInfo
			if p.NewConfig != nil {
				fields = config.Fields(p.NewConfig())
			}
			checkTable(t, doc, "Configuration", fields)
			if p.NewCredential != nil {
				checkTable(t, doc, "Consumer credential", config.Fields(p.NewCredential()))
			} else if _, ok := doc.sections["Consumer credential"]; ok {
				t.Errorf("has a Consumer credential section but the plugin registers no NewCredential")
			}
			if _, err := os.Stat(filepath.Join(root, "envoy", "examples", name+".yaml")); err != nil {
				t.Errorf("no runnable example envoy/examples/%s.yaml: %v", name, err)
			}
		})
	}
}

func checkSections(t *testing.T, doc *readmeDoc) {
	t.Helper()
	at := -1
	for _, want := range requiredSections {
		i := slices.Index(doc.order, want)
		if i < 0 {
			t.Errorf("%s: no %q section (sections: %q)", doc.path, "## "+want, doc.order)
			continue
		}
		if i < at {
			t.Errorf("%s: section %q is out of order; want %q", doc.path, want, requiredSections)
		}
		at = i
	}
}

func checkAttributes(t *testing.T, doc *readmeDoc) {
	t.Helper()
	attrs := doc.attributes()
	for _, a := range requiredAttributes {
		if attrs[a] == "" {
			t.Errorf("%s: Attributes table has no %q row", doc.path, a)
		}
	}
}

// checkTable compares the first table of a section with the fields.
func checkTable(t *testing.T, doc *readmeDoc, section string, fields []config.FieldInfo) {
	t.Helper()
	lines, ok := doc.sections[section]
	if !ok {
		t.Errorf("%s: no %q section", doc.path, "## "+section)
		return
	}
	if len(fields) == 0 {
		if len(table(lines)) > 0 {
			t.Errorf("%s: %s table, but the plugin has no config fields", doc.path, section)
		}
		return
	}
	if header := tableHeader(lines); header != configHeader {
		t.Errorf("%s: %s table header is %q, want %q", doc.path, section, tableHeader(lines), configHeader)
		return
	}
	documented := map[string]string{}
	var order []string
	for _, r := range table(lines) {
		if len(r) < 2 {
			continue
		}
		f := strings.Trim(r[0], "` ")
		if _, dup := documented[f]; dup {
			t.Errorf("%s: %s: field %s documented twice", doc.path, section, f)
		}
		documented[f] = strings.ReplaceAll(strings.Trim(r[1], "` "), " ", "")
		order = append(order, f)
	}
	want := map[string]string{}
	for _, f := range fields {
		want[f.Path] = f.Type
		got, ok := documented[f.Path]
		switch {
		case !ok:
			t.Errorf("%s: %s table has no row for field %s (%s)", doc.path, section, f.Path, f.Type)
		case got != f.Type:
			t.Errorf("%s: %s table says field %s is %q, the config type says %q", doc.path, section, f.Path, got, f.Type)
		}
	}
	for _, f := range order {
		if _, ok := want[f]; !ok {
			t.Errorf("%s: %s table documents %s, which is not a config field", doc.path, section, f)
		}
	}
}

func TestSplitRowKeepsEscapedPipes(t *testing.T) {
	got := fmt.Sprint(splitRow("| `empty_key` | `shared` \\| `reject` | x |"))
	if got != "[`empty_key` `shared` | `reject` x]" {
		t.Fatal(got)
	}
}

// The generated catalogue (catalog_gen.go, which moectl plugins and schema
// read, and the root README's plugin tables) matches the registry and the
// READMEs: edit those and run go generate ./plugins/all.
func TestCatalogueIsFresh(t *testing.T) {
	root := hosttest.RepoRoot(t)
	entries, err := BuildCatalog(root)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(entries, Catalog) {
		t.Errorf("plugins/all/catalog_gen.go is stale: run go generate ./plugins/all")
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := ReplaceCatalogue(string(readme), entries)
	if err != nil {
		t.Fatal(err)
	}
	if want != string(readme) {
		t.Errorf("README.md's plugin catalogue is stale: run go generate ./plugins/all")
	}
	for _, e := range entries {
		if e.Description == "" {
			t.Errorf("plugin %s registers no Description (the catalogue's \"what\")", e.Name)
		}
	}
}
