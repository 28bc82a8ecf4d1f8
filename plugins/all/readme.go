package all

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Reading the plugins' READMEs (plugins/README.md's form): the docs test
// checks them against the config types, and the generator turns them into
// the catalogue (catalog_gen.go, the root README's plugin tables).

// readmeDoc is one plugin README split into its "## " sections.
type readmeDoc struct {
	path     string
	order    []string            // "## " headings in order
	sections map[string][]string // heading -> lines
}

// findREADMEs maps the "# <name>" titles of the READMEs under dir to their
// paths.
func findREADMEs(dir string) (map[string]string, error) {
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
	return out, err
}

func readREADME(path string) (*readmeDoc, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc := &readmeDoc{path: path, sections: map[string][]string{}}
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
	return doc, nil
}

// tableHeader is the first row of the first table of a section, normalized.
func tableHeader(lines []string) string {
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "|") {
			return "| " + strings.Join(splitRow(l), " | ") + " |"
		}
	}
	return ""
}

var separatorRow = regexp.MustCompile(`^(:?-+:?\|?)+$`)

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
		if separatorRow.MatchString(strings.Join(cells, "|")) {
			continue
		}
		rows = append(rows, cells)
	}
	return rows
}

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

// attributes reads the Attributes table: name -> text.
func (d *readmeDoc) attributes() map[string]string {
	out := map[string]string{}
	for _, r := range table(d.sections["Attributes"]) {
		if len(r) >= 2 {
			out[strings.Trim(r[0], "* ")] = r[1]
		}
	}
	return out
}

// fieldRows reads a configuration-form table of a section.
func (d *readmeDoc) fieldRows(section string) ([]FieldDoc, error) {
	var out []FieldDoc
	for _, r := range table(d.sections[section]) {
		if len(r) < 6 {
			return nil, fmt.Errorf("%s: %s: row %q has %d cells, want 6", d.path, section, strings.Join(r, " | "), len(r))
		}
		out = append(out, FieldDoc{
			Path: strings.Trim(r[0], "` "), Type: strings.ReplaceAll(strings.Trim(r[1], "` "), " ", ""),
			Default: r[2], Required: r[3] == "yes", Validation: r[4], Description: r[5],
		})
	}
	return out, nil
}
