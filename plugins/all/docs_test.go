package all_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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

var requiredAttributes = []string{"phase", "may block", "body", "order"}

const configHeader = "| field | type | default | required | validation | description |"

func TestEveryPluginREADMEMatchesItsConfig(t *testing.T) {
	root := hosttest.RepoRoot(t)
	readmes := pluginREADMEs(t, filepath.Join(root, "plugins"))
	for _, name := range registry.Names() {
		t.Run(name, func(t *testing.T) {
			path, ok := readmes[name]
			if !ok {
				t.Fatalf("no README.md under plugins/ starts with %q", "# "+name)
			}
			p, _ := registry.Get(name)
			doc := parseREADME(t, path)
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

type readme struct {
	path     string
	order    []string            // "## " headings in order
	sections map[string][]string // heading -> lines
}

// pluginREADMEs maps "# <name>" titles of READMEs under dir to their paths.
func pluginREADMEs(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "README.md" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		first, _, _ := strings.Cut(string(b), "\n")
		if name, ok := strings.CutPrefix(first, "# "); ok {
			out[strings.TrimSpace(name)] = path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func parseREADME(t *testing.T, path string) *readme {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := &readme{path: path, sections: map[string][]string{}}
	cur := ""
	inCode := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if h, ok := strings.CutPrefix(line, "## "); ok && !inCode {
			cur = strings.TrimSpace(h)
			doc.order = append(doc.order, cur)
			continue
		}
		if cur != "" {
			doc.sections[cur] = append(doc.sections[cur], line)
		}
	}
	return doc
}

func checkSections(t *testing.T, doc *readme) {
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

func checkAttributes(t *testing.T, doc *readme) {
	t.Helper()
	rows := table(doc.sections["Attributes"])
	seen := map[string]bool{}
	for _, r := range rows {
		if len(r) >= 2 {
			seen[strings.Trim(r[0], "* ")] = true
		}
	}
	for _, a := range requiredAttributes {
		if !seen[a] {
			t.Errorf("%s: Attributes table has no %q row", doc.path, a)
		}
	}
}

// checkTable compares the first table of a section with the fields.
func checkTable(t *testing.T, doc *readme, section string, fields []config.FieldInfo) {
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
	header := ""
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "|") {
			header = normalizeRow(l)
			break
		}
	}
	if header != configHeader {
		t.Errorf("%s: %s table header is %q, want %q", doc.path, section, header, configHeader)
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

// table returns the body rows (after the header and separator) of the first
// markdown table in lines, cells trimmed; "\|" inside a cell is kept.
func table(lines []string) [][]string {
	var rows [][]string
	started := false
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "|") {
			if started {
				break
			}
			continue
		}
		cells := splitRow(l)
		if !started {
			started = true // the header row
			continue
		}
		if separator.MatchString(strings.Join(cells, "|")) {
			continue
		}
		rows = append(rows, cells)
	}
	return rows
}

var separator = regexp.MustCompile(`^(:?-+:?\|?)+$`)

// splitRow splits a table row on "|"; "\|" is a literal pipe inside a cell.
func splitRow(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(l, "|")
	l = strings.TrimSuffix(l, "|")
	var out []string
	var cell strings.Builder
	for i := 0; i < len(l); i++ {
		switch {
		case l[i] == '\\' && i+1 < len(l) && l[i+1] == '|':
			cell.WriteByte('|')
			i++
		case l[i] == '|':
			out = append(out, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(l[i])
		}
	}
	return append(out, strings.TrimSpace(cell.String()))
}

func normalizeRow(l string) string {
	return "| " + strings.Join(splitRow(l), " | ") + " |"
}

func TestSplitRowKeepsEscapedPipes(t *testing.T) {
	got := fmt.Sprint(splitRow("| `empty_key` | `shared` \\| `reject` | x |"))
	if got != "[`empty_key` `shared` | `reject` x]" {
		t.Fatal(got)
	}
}
