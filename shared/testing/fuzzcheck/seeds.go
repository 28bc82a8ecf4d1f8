// Package fuzzcheck holds what moe's Go fuzz targets share: seeds taken from
// the repository's own configs (every bootstrap under envoy/, the Istio
// files, the YAML snippets of the READMEs), and the checks a config parser
// must pass on any input (no panic, a *config.Error naming plugin and field,
// no secret in the message, the same answer twice).
//
// A plugin's config fuzz target is one line:
//
//	func FuzzConfig(f *testing.F) { fuzzcheck.PluginConfig(f, "key-auth") }
//
// Run it with `go test -run '^$' -fuzz '^FuzzConfig$' ./plugins/auth/keyauth`
// or `make fuzz`; without -fuzz the seeds (and testdata/fuzz/FuzzConfig/*)
// run as an ordinary test.
package fuzzcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
)

// Root is the repository root (the directory holding go.mod), found from the
// working directory of the test.
func Root() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// Configs found in the repository, collected once per test binary.
type corpus struct {
	// plugin name -> distinct configs (JSON)
	plugins map[string][][]byte
	// moe chain configs ({"plugins": [...], "consumers": [...]}) as JSON
	chains [][]byte
}

var (
	corpusOnce sync.Once
	repo       corpus
)

func load() corpus {
	corpusOnce.Do(func() {
		repo = corpus{plugins: map[string][][]byte{}}
		seen := map[string]bool{}
		add := func(plugin string, v any) {
			b, err := json.Marshal(v)
			if err != nil {
				return
			}
			k := plugin + "\x00" + string(b)
			if seen[k] {
				return
			}
			seen[k] = true
			if plugin == "" {
				repo.chains = append(repo.chains, b)
			} else {
				repo.plugins[plugin] = append(repo.plugins[plugin], b)
			}
		}
		root := Root()
		for _, doc := range yamlDocuments(root) {
			walk(doc, add)
		}
		sort.Slice(repo.chains, func(i, j int) bool { return bytes.Compare(repo.chains[i], repo.chains[j]) < 0 })
	})
	return repo
}

// PluginSeeds returns every config of plugin found in the repository's YAML.
func PluginSeeds(plugin string) [][]byte { return load().plugins[plugin] }

// ChainSeeds returns every moe chain config found in the repository's YAML.
func ChainSeeds() [][]byte { return load().chains }

var yamlBlock = regexp.MustCompile("(?s)```ya?ml\n(.*?)```")

// yamlDocuments parses the YAML files under envoy/ and istio/ and the yaml
// code blocks of every README.md; what does not parse is skipped.
func yamlDocuments(root string) []any {
	var texts [][]byte
	for _, dir := range []string{"envoy", "istio", "plugins", "shared", "cmd"} {
		_ = filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() {
				if d.Name() == "istiodcheck" || d.Name() == "out" {
					return filepath.SkipDir
				}
				return nil
			}
			name := d.Name()
			switch {
			case (strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) && dir != "cmd":
				if b, err := os.ReadFile(path); err == nil {
					texts = append(texts, b)
				}
			case name == "README.md":
				if b, err := os.ReadFile(path); err == nil {
					for _, m := range yamlBlock.FindAllSubmatch(b, -1) {
						texts = append(texts, m[1])
					}
				}
			}
			return nil
		})
	}
	if b, err := os.ReadFile(filepath.Join(root, "README.md")); err == nil {
		for _, m := range yamlBlock.FindAllSubmatch(b, -1) {
			texts = append(texts, m[1])
		}
	}
	var docs []any
	for _, t := range texts {
		dec := yaml.NewDecoder(bytes.NewReader(t))
		for i := 0; i < 100; i++ {
			var v any
			err := dec.Decode(&v)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				break
			}
			if v != nil {
				docs = append(docs, v)
			}
		}
	}
	return docs
}

// walk finds moe chains ({plugins: [{name, config}]}) and plugins used as
// golang filters of their own ({plugin_name, plugin_config: {value}}).
func walk(v any, add func(plugin string, v any)) {
	switch x := v.(type) {
	case map[string]any:
		if list, ok := x["plugins"].([]any); ok && len(list) > 0 {
			chain := true
			for _, e := range list {
				m, ok := e.(map[string]any)
				if !ok {
					chain = false
					continue
				}
				name, _ := m["name"].(string)
				if name == "" {
					chain = false
					continue
				}
				if c, ok := m["config"]; ok && c != nil {
					add(name, c)
				}
			}
			if chain {
				add("", x)
			}
		}
		if name, ok := x["plugin_name"].(string); ok && name != "moe" {
			if pc, ok := x["plugin_config"].(map[string]any); ok {
				if val, ok := pc["value"]; ok && val != nil {
					add(name, val)
				}
			}
		}
		for _, e := range x {
			walk(e, add)
		}
	case []any:
		for _, e := range x {
			walk(e, add)
		}
	}
}
