package compile

import (
	"errors"
	"io/fs"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// fakeLibrary is the library_path the test bootstraps use; tests do not need a real .so.
const fakeLibrary = "/abs/out/libgolang.so"

var testOptions = Options{StatLibrary: func(path string) error {
	if path == fakeLibrary {
		return nil
	}
	return fs.ErrNotExist
}, Now: func() time.Time { return time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC) }}

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var markerLine = regexp.MustCompile(`(?m)^([ ]*)#([A-Z_]+)\n`)

// minimal returns testdata/minimal.yaml with snippets spliced in at their "#MARKER" lines,
// indented like the marker. Unused markers vanish.
func minimal(t *testing.T, snippets map[string]string) string {
	t.Helper()
	used := map[string]bool{}
	out := markerLine.ReplaceAllStringFunc(readTestdata(t, "minimal.yaml"), func(line string) string {
		m := markerLine.FindStringSubmatch(line)
		snippet, ok := snippets[m[2]]
		if !ok {
			return ""
		}
		used[m[2]] = true
		var b strings.Builder
		for _, l := range strings.Split(strings.TrimRight(snippet, "\n"), "\n") {
			b.WriteString(m[1] + l + "\n")
		}
		return b.String()
	})
	for k := range snippets {
		if !used[k] {
			t.Fatalf("no marker #%s in minimal.yaml", k)
		}
	}
	return out
}

func compileString(t *testing.T, y string) (*Result, error) {
	t.Helper()
	return Bytes([]byte(y), testOptions)
}

// errorLines returns each reported problem as "path: message".
func errorLines(err error) []string {
	var list ypath.List
	if !errors.As(err, &list) {
		if err == nil {
			return nil
		}
		return []string{err.Error()}
	}
	lines := make([]string, len(list))
	for i, e := range list {
		lines[i] = e.Error()
	}
	return lines
}

// wantError fails unless err contains a problem equal to want.
func wantError(t *testing.T, err error, want string) {
	t.Helper()
	lines := errorLines(err)
	for _, l := range lines {
		if l == want {
			return
		}
	}
	t.Fatalf("want error\n  %s\ngot\n  %s", want, strings.Join(lines, "\n  "))
}

// Paths used in expectations.
const (
	hcmPath    = "static_resources.listeners[0].filter_chains[0].filters[0].typed_config"
	golangPath = hcmPath + ".http_filters[0].typed_config"
	rcPath     = hcmPath + ".route_config"
	vhPath     = rcPath + ".virtual_hosts[0]"
	routePath  = vhPath + ".routes[0]"
)

func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if strings.Count(s, old) != 1 {
		t.Fatalf("%q occurs %d times", old, strings.Count(s, old))
	}
	return strings.Replace(s, old, new, 1)
}
