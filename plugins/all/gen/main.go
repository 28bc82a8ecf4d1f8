// Command gen writes plugins/all/catalog_gen.go and the plugin tables of the
// root README from the registry and the plugins' READMEs:
//
//	go generate ./plugins/all
//
// plugins/all's tests fail when either is stale.
package main

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/moeproxy/moe/plugins/all"
)

func main() {
	root, err := repoRoot()
	if err != nil {
		log.Fatal(err)
	}
	entries, err := all.BuildCatalog(root)
	if err != nil {
		log.Fatal(err)
	}
	src, err := all.RenderGo(entries)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "plugins/all/catalog_gen.go"), src, 0o644); err != nil {
		log.Fatal(err)
	}
	readme := filepath.Join(root, "README.md")
	b, err := os.ReadFile(readme)
	if err != nil {
		log.Fatal(err)
	}
	out, err := all.ReplaceCatalogue(string(b), entries)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(readme, []byte(out), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("catalogue: %d plugins\n", len(entries))
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/moeproxy/moe\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no moe go.mod above the working directory")
		}
		dir = parent
	}
}
