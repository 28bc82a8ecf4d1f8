package yamltree

import (
	"strings"
	"testing"

	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

func TestPositionsAndValues(t *testing.T) {
	src := `# comment
a:
  b: [1, 2.5, "x", true, null, 0x10]
  "c.d": {e: f}
base: &base {k: 1, m: 2}
merged:
  <<: *base
  m: 3
---
second: doc
`
	docs, err := Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 {
		t.Fatalf("%d docs", len(docs))
	}
	root := docs[0].Root
	n, exact := root.Lookup(ypath.Parse("a.b[1]"))
	if !exact || n.Line != 3 || n.Column != 10 {
		t.Fatalf("a.b[1] at %d:%d exact %v", n.Line, n.Column, exact)
	}
	if got := string(docs[0].JSON()); !strings.Contains(got, `"b":[1,2.5,"x",true,null,16]`) || !strings.Contains(got, `"merged":{"k":1,"m":3}`) {
		t.Fatalf("json %s", got)
	}
	// A dotted key is found from a dotted field path.
	if n, exact := root.Lookup(ypath.Parse("a.c.d.e")); !exact || n.Value != "f" {
		t.Fatalf("a.c.d.e: %v %v", n, exact)
	}
	// A missing field points at its parent.
	if n, exact := root.Lookup(ypath.Parse("a.zz.y")); exact || n.Line != 3 {
		t.Fatalf("missing: %d exact %v", n.Line, exact)
	}
	if l, c, ok := root.KeyPosition(ypath.Parse("a.b")); !ok || l != 3 || c != 3 {
		t.Fatalf("key a.b at %d:%d %v", l, c, ok)
	}
	if docs[1].Line != 10 {
		t.Fatalf("second doc at line %d", docs[1].Line)
	}
}

func TestErrors(t *testing.T) {
	for src, want := range map[string]string{
		"a: 1\na: 2\n":   `line 2, column 1: key "a" already set at line 1, column 1`,
		"a: [\n":         "line 1: did not find expected node content",
		"a: {<<: [1]}\n": "a merge key (<<) needs a mapping",
	} {
		_, err := Parse([]byte(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", src, err, want)
		}
	}
}

func TestEmpty(t *testing.T) {
	docs, err := Parse([]byte("# nothing\n"))
	if err != nil || len(docs) != 1 || docs[0].Root != nil {
		t.Fatalf("%v %v", docs, err)
	}
}
