package compile

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/moeproxy/moe/cmd/moectl/internal/plugincheck"
)

const secretsSnippet = `secrets:
- {name: str, generic_secret: {secret: {inline_string: "hello"}}}
- {name: raw, generic_secret: {secret: {inline_bytes: "/wA="}}}`

func TestGenericSecretsResolveToStaticSecretValues(t *testing.T) {
	res, err := compileString(t, minimal(t, map[string]string{
		"SECRETS": secretsSnippet,
		"GOLANG":  "generic_secrets: [{name: str}, {name: raw}]",
	}))
	if err != nil {
		t.Fatal(err)
	}
	got := res.Bootstrap.Listeners[0].HCM.HTTPFilters[0].Golang.Secrets
	want := map[string]string{
		"str": base64.StdEncoding.EncodeToString([]byte("hello")),
		"raw": base64.StdEncoding.EncodeToString([]byte{0xff, 0}),
	}
	if !jsonEqual(t, got, want) {
		t.Fatalf("secrets = %v, want %v", got, want)
	}
}

func TestSecretProblemsAreRefused(t *testing.T) {
	cases := []struct {
		name     string
		snippets map[string]string
		want     string
	}{
		{"unresolved name", map[string]string{"SECRETS": secretsSnippet, "GOLANG": "generic_secrets: [{name: str}, {name: nope}]"},
			golangPath + `.generic_secrets[1].name: secret "nope" is not a generic_secret in static_resources.secrets`},
		{"no secrets at all", map[string]string{"GOLANG": "generic_secrets: [{name: str}]"},
			golangPath + `.generic_secrets[0].name: secret "str" is not a generic_secret in static_resources.secrets`},
		{"value from a file", map[string]string{"SECRETS": "secrets: [{name: f, generic_secret: {secret: {filename: /etc/hostname}}}]"},
			"static_resources.secrets[0].generic_secret.secret.filename: not supported by moe-host"},
		{"duplicate name", map[string]string{"SECRETS": "secrets: [{name: a, generic_secret: {}}, {name: a, generic_secret: {}}]"},
			`static_resources.secrets[1].name: secret name "a" is already used`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := compileString(t, minimal(t, c.snippets))
			wantError(t, err, c.want)
		})
	}
}

func perRoute(filter string) string {
	return "typed_per_filter_config:\n  " + filter + ":\n" +
		"    \"@type\": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.ConfigsPerRoute\n" +
		"    plugins_config: {moe: {disabled: true}}"
}

func TestPerFilterConfigProblemsAreRefusedAtEveryLevel(t *testing.T) {
	for _, level := range []struct{ marker, path string }{
		{"ROUTE_CONFIG", rcPath}, {"VHOST", vhPath}, {"ROUTE", routePath},
	} {
		t.Run(level.marker, func(t *testing.T) {
			cases := []struct {
				name, snippet, want string
			}{
				{"key names no http filter", perRoute("envoy.filters.http.nope"),
					level.path + `.typed_per_filter_config["envoy.filters.http.nope"]: names no http filter of this http_connection_manager`},
				{"router takes no per-route config", perRoute("envoy.filters.http.router"),
					level.path + `.typed_per_filter_config["envoy.filters.http.router"]: the router filter takes no per-route config in moe-host`},
				{"not a ConfigsPerRoute", "typed_per_filter_config:\n  envoy.filters.http.golang: {\"@type\": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}",
					level.path + `.typed_per_filter_config["envoy.filters.http.golang"]: must be a envoy.extensions.filters.http.golang.v3alpha.ConfigsPerRoute, got type.googleapis.com/envoy.extensions.filters.http.router.v3.Router`},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					_, err := compileString(t, minimal(t, map[string]string{level.marker: c.snippet}))
					wantError(t, err, c.want)
				})
			}
		})
	}
}

func TestPerRouteEntryForAnotherPluginNameIsAWarning(t *testing.T) {
	y := minimal(t, map[string]string{"ROUTE": `typed_per_filter_config:
  envoy.filters.http.golang:
    "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.ConfigsPerRoute
    plugins_config: {other: {disabled: true}}`})
	res, err := compileString(t, y)
	if err != nil {
		t.Fatal(err)
	}
	want := routePath + `.typed_per_filter_config["envoy.filters.http.golang"].plugins_config["other"]: filter "envoy.filters.http.golang" has plugin_name "moe"; this entry is never used`
	if len(res.Warnings) != 1 || res.Warnings[0] != want {
		t.Fatalf("warnings = %q", res.Warnings)
	}
}

func TestRouterMustBeLast(t *testing.T) {
	golangFilter := `- name: g2
  typed_config:
    "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.Config
    library_id: moe
    library_path: /abs/out/libgolang.so
    plugin_name: moe`
	cases := []struct {
		name string
		y    string
		want string
	}{
		{"router before a golang filter", minimal(t, map[string]string{"FILTERS": "- name: early-router\n  typed_config: {\"@type\": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}"}),
			hcmPath + ".http_filters[1]: the router filter must be the last http filter"},
	}
	// Without a router: drop the router entry from the template.
	noRouter := minimal(t, map[string]string{"FILTERS": golangFilter})
	noRouter = replaceOnce(t, noRouter, "          - name: envoy.filters.http.router\n            typed_config: {\"@type\": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}\n", "")
	cases = append(cases, struct{ name, y, want string }{"no router", noRouter,
		hcmPath + ".http_filters: a router filter (envoy.extensions.filters.http.router.v3.Router) is required as the last http filter"})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := compileString(t, c.y)
			wantError(t, err, c.want)
		})
	}
}

func TestLibraryPathMustExist(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, "libgolang.so")
	if err := os.WriteFile(lib, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	withLib := func(path string) string {
		return replaceOnce(t, minimal(t, nil), "library_path: "+fakeLibrary, "library_path: "+path)
	}
	// The real os.Stat check, not the test fake.
	if _, err := Bytes([]byte(withLib(lib)), Options{}); err != nil {
		t.Fatalf("existing library refused: %v", err)
	}
	missing := filepath.Join(dir, "missing.so")
	_, err := Bytes([]byte(withLib(missing)), Options{})
	wantError(t, err, golangPath+".library_path: library "+missing+" does not exist (relative paths are resolved against the working directory, as in Envoy)")
	if _, err := Bytes([]byte(withLib(missing)), Options{SkipLibraryCheck: true}); err != nil {
		t.Fatalf("SkipLibraryCheck still checked: %v", err)
	}
}

func TestPluginCheckHookSeesEveryPluginConfig(t *testing.T) {
	var seen []plugincheck.Target
	plugincheck.Validate = func(tg plugincheck.Target) error {
		seen = append(seen, tg)
		if tg.PerRoute {
			return errors.New("bad per-route config")
		}
		return nil
	}
	t.Cleanup(func() { plugincheck.Validate = nil })
	_, err := compileString(t, readTestdata(t, "envoy.yaml"))
	// Filter-level config plus the route_configuration and virtual_host ones (the route-level
	// entry only disables, so it has no config to check).
	if len(seen) != 3 {
		t.Fatalf("hook called %d times: %+v", len(seen), seen)
	}
	if seen[0].PerRoute || seen[0].PluginName != "moe" || seen[0].LibraryID != "moe" || seen[0].Path != golangPath+".plugin_config" {
		t.Fatalf("filter-level target = %+v", seen[0])
	}
	wantError(t, err, rcPath+`.typed_per_filter_config["envoy.filters.http.golang"].plugins_config["moe"].config: bad per-route config`)
}
