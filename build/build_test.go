// Package build holds the checks of build/: the versions written once in versions.env agree
// with go.mod, envoy/ENVOY_VERSION, the Dockerfiles and the Istio files, and the built
// libgolang.so needs no newer glibc than the Envoy image has.
package build

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// versions reads versions.env (KEY=value lines).
func versions(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("versions.env")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, val, ok := strings.Cut(line, "=")
		if !ok || strings.ContainsAny(val, " \"'$`") {
			t.Fatalf("versions.env: %q is not KEY=value", line)
		}
		v[k] = val
	}
	return v
}

// goMod returns the go line and the required module versions of the main module.
func goMod(t *testing.T) (goLine string, req map[string]string) {
	t.Helper()
	data, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	req = map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		switch {
		case len(f) >= 2 && f[0] == "go":
			goLine = f[1]
		case len(f) >= 2 && strings.Contains(f[0], ".") && strings.HasPrefix(f[1], "v"):
			req[f[0]] = f[1]
		}
	}
	return goLine, req
}

func minor(v string) string {
	parts := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// less compares dotted version numbers.
func less(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, _ := strconv.Atoi(as[i])
		y, _ := strconv.Atoi(bs[i])
		if x != y {
			return x < y
		}
	}
	return len(as) < len(bs)
}

func TestVersionsAgreeWithGoMod(t *testing.T) {
	v := versions(t)
	goLine, req := goMod(t)
	if got := req["github.com/envoyproxy/envoy"]; got != "v"+v["ENVOY_VERSION"] {
		t.Errorf("go.mod has github.com/envoyproxy/envoy %s, versions.env ENVOY_VERSION=%s: the .so's Go SDK is the Envoy it runs in", got, v["ENVOY_VERSION"])
	}
	if minor(v["ENVOY_VERSION"]) != v["ENVOY_MINOR"] {
		t.Errorf("ENVOY_MINOR=%s is not the minor of ENVOY_VERSION=%s", v["ENVOY_MINOR"], v["ENVOY_VERSION"])
	}
	if got := req["github.com/envoyproxy/go-control-plane/envoy"]; minor(got) != v["ENVOY_MINOR"] {
		t.Errorf("go.mod has go-control-plane/envoy %s: moectl must check configs with the protos of Envoy %s", got, v["ENVOY_MINOR"])
	}
	if got := req["istio.io/api"]; less(minor(got), v["ISTIO_MINOR"]) {
		t.Errorf("go.mod has istio.io/api %s, older than Istio %s: EnvoyFilters would be decoded with an older API", got, v["ISTIO_MINOR"])
	}
	if goLine != v["GO_VERSION"] {
		t.Errorf("go.mod says go %s, versions.env GO_VERSION=%s", goLine, v["GO_VERSION"])
	}
	pinned, err := os.ReadFile("../envoy/ENVOY_VERSION")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(pinned)); got != "v"+v["ENVOY_VERSION"] {
		t.Errorf("envoy/ENVOY_VERSION is %s, versions.env ENVOY_VERSION=%s", got, v["ENVOY_VERSION"])
	}
	if !strings.Contains(v["ENVOY_IMAGE"], ":contrib-v"+v["ENVOY_MINOR"]) {
		t.Errorf("ENVOY_IMAGE=%s is not a contrib image of Envoy %s (only contrib has the golang filter)", v["ENVOY_IMAGE"], v["ENVOY_MINOR"])
	}
	if !strings.HasPrefix(v["ISTIO_VERSION"], v["ISTIO_MINOR"]+".") {
		t.Errorf("ISTIO_VERSION=%s is not a release of ISTIO_MINOR=%s", v["ISTIO_VERSION"], v["ISTIO_MINOR"])
	}
	for _, k := range []string{"BUILDER_IMAGE", "ENVOY_MOE_IMAGE", "ISTIO_INIT_IMAGE"} {
		if !strings.Contains(v[k], v["ENVOY_MINOR"]) {
			t.Errorf("%s=%s: tag it with the Envoy minor %s it is for", k, v[k], v["ENVOY_MINOR"])
		}
	}
}

var argRE = regexp.MustCompile(`(?m)^ARG ([A-Z_]+)=(\S+)$`)

// The Dockerfiles' defaults are versions.env's, so a plain `docker build` builds the same.
func TestDockerfileDefaults(t *testing.T) {
	v := versions(t)
	want := map[string]string{
		"GO_VERSION": v["GO_VERSION"], "BUILD_OS_IMAGE": v["BUILD_OS_IMAGE"], "ENVOY_GLIBC": v["GLIBC"],
		"BUILDER_IMAGE": v["BUILDER_IMAGE"], "ENVOY_IMAGE": v["ENVOY_IMAGE"],
	}
	files, _ := filepath.Glob("Dockerfile.*")
	if len(files) != 3 {
		t.Fatalf("Dockerfiles %v", files)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range argRE.FindAllStringSubmatch(string(data), -1) {
			w, known := want[m[1]]
			if !known {
				t.Errorf("%s: ARG %s is not in versions.env's table here", f, m[1])
			} else if m[2] != w {
				t.Errorf("%s: ARG %s=%s, versions.env says %s", f, m[1], m[2], w)
			}
		}
		if !strings.HasPrefix(string(data), "# syntax=docker/dockerfile:1\n") {
			t.Errorf("%s: want the BuildKit syntax line first", f)
		}
	}
}

// The Istio files run the init image versions.env names.
func TestIstioFilesUseTheInitImage(t *testing.T) {
	v := versions(t)
	files, _ := filepath.Glob("../istio/*.yaml")
	re := regexp.MustCompile(`image: (\S*istio-init\S*)`)
	n := 0
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, m := range re.FindAllStringSubmatch(string(data), -1) {
			n++
			if m[1] != v["ISTIO_INIT_IMAGE"] {
				t.Errorf("%s: image %s, versions.env ISTIO_INIT_IMAGE=%s", f, m[1], v["ISTIO_INIT_IMAGE"])
			}
		}
	}
	if n < 4 {
		t.Errorf("found %d init image references in istio/*.yaml", n)
	}
}

func TestScriptsParse(t *testing.T) {
	for _, s := range []string{"install-deps.sh", "images.sh"} {
		if out, err := exec.Command("bash", "-n", s).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", s, err, out)
		}
	}
}

var glibcRE = regexp.MustCompile(`GLIBC_([0-9]+(\.[0-9]+)+)`)

// The built library must load in the Envoy image: it may need no newer glibc symbol version
// than GLIBC (the image's). readelf lists the versions its dynamic symbols need.
func TestLibraryNeedsNoNewerGlibc(t *testing.T) {
	lib := "../out/libgolang.so"
	if _, err := os.Stat(lib); err != nil {
		if os.Getenv("MOE_REQUIRE_HOST") != "" {
			t.Fatalf("%s missing: make build", lib)
		}
		t.Skipf("%s missing: make build", lib)
	}
	readelf, err := exec.LookPath("readelf")
	if err != nil {
		t.Fatalf("readelf not found (binutils; build/install-deps.sh installs it): %v", err)
	}
	out, err := exec.Command(readelf, "--wide", "--version-info", lib).Output()
	if err != nil {
		t.Fatalf("readelf: %v", err)
	}
	seen := map[string]bool{}
	for _, m := range glibcRE.FindAllSubmatch(out, -1) {
		seen[string(m[1])] = true
	}
	if len(seen) == 0 {
		t.Fatalf("readelf shows no GLIBC_ version needed by %s:\n%s", lib, firstLines(out, 20))
	}
	var list []string
	for k := range seen {
		list = append(list, k)
	}
	sort.Slice(list, func(i, j int) bool { return less(list[i], list[j]) })
	newest := list[len(list)-1]
	glibc := versions(t)["GLIBC"]
	if less(glibc, newest) {
		t.Errorf("%s needs GLIBC_%s, newer than the Envoy image's glibc %s: it would not load there (build it with build/Dockerfile.builder)", lib, newest, glibc)
	}
	t.Logf("%s needs glibc >= %s (Envoy image: %s); versions used: %v", lib, newest, glibc, list)
}

func firstLines(b []byte, n int) string {
	lines := bytes.SplitN(b, []byte("\n"), n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// The builder image links libgolang.so with the flags make uses (cshared.mk): the image's
// library must have the same GODEBUG defaults as the one the tests and benchmarks ran.
func TestBuilderImageUsesTheLibraryLinkFlags(t *testing.T) {
	mk, err := os.ReadFile("cshared.mk")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^CSHARED_LDFLAGS := -X=runtime\.godebugDefault=\S+$`).Match(mk) {
		t.Errorf("cshared.mk has no CSHARED_LDFLAGS line the builder image can read:\n%s", mk)
	}
	for file, want := range map[string][]string{
		"Dockerfile.builder": {`sed -n 's/^CSHARED_LDFLAGS := //p' build/cshared.mk`, `-ldflags="${ldflags}"`},
		"../Makefile":        {"include build/cshared.mk", "-ldflags='$(CSHARED_LDFLAGS)' -o $@ ./cgo/libgolang"},
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !bytes.Contains(b, []byte(w)) {
				t.Errorf("%s does not contain %q", file, w)
			}
		}
	}
}
