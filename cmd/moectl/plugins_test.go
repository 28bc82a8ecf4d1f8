package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// atRepoRoot makes the repository root the working directory for the rest of the test:
// users run moectl (and Envoy, and make run) from there, and relative paths in the
// configs (a direct-response body_file, a jwks.file) are resolved against it, as Envoy
// resolves them against its working directory.
func atRepoRoot(t *testing.T) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
}

// Every bootstrap shipped in the repository validates, plugin configs included, from the
// repository root.
func TestShippedBootstrapsValidate(t *testing.T) {
	atRepoRoot(t)
	files, _ := filepath.Glob("envoy/examples/*.yaml")
	files = append(files, "envoy/envoy.yaml")
	if len(files) < 2 {
		t.Fatalf("no examples found: %v", files)
	}
	for _, f := range files {
		if code, out, errs := runCLI("validate", "--skip-library-check", f); code != 0 || errs != "" || !strings.Contains(out, ": ok (Envoy bootstrap") {
			t.Errorf("%s: code %d, stdout %q, stderr:\n%s", f, code, out, errs)
		}
	}
	// moe-host runs them all.
	args := append([]string{"validate", "--skip-library-check", "--target", "moe-host"}, files...)
	if code, _, errs := runCLI(args...); code != 0 || errs != "" {
		t.Errorf("--target moe-host: code %d, stderr:\n%s", code, errs)
	}
}

// Validating every shipped bootstrap (each plugin's Init runs in check-only mode, in this
// process) leaves nothing running and binds nothing: ldc-route's example validates while its
// admin address is held, as it is when a host serves the example.
func TestValidationStartsAndBindsNothing(t *testing.T) {
	atRepoRoot(t)
	files, _ := filepath.Glob("envoy/examples/*.yaml")
	held := fakeframework.NewListener(t)
	src, err := os.ReadFile("envoy/examples/ldc-route.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const admin = `admin: {address: "127.0.0.1:9980"}`
	if !strings.Contains(string(src), admin) {
		t.Fatalf("envoy/examples/ldc-route.yaml has no %s: update the test", admin)
	}
	ldc := writeFile(t, "ldc-route.yaml", strings.Replace(string(src), admin, `admin: {address: "`+held.Addr()+`"}`, 1))
	args := append([]string{"validate", "--skip-library-check", "-q", ldc}, files...)
	fakeframework.StartsNoGoroutine(t, func() {
		if code, _, errs := runCLI(args...); code != 0 || errs != "" {
			t.Errorf("code %d:\n%s", code, errs)
		}
	})
}

// A bootstrap with access log filters, CORS, redirects, TLS upstreams and more is valid for
// Envoy; moe-host cannot run it, which --target moe-host says as warnings.
func TestFullFeaturedBootstrap(t *testing.T) {
	const f = "testdata/full-featured.yaml"
	code, out, errs := runCLI("validate", "--skip-library-check", f)
	if code != 0 || errs != "" || out != f+": ok (Envoy bootstrap; 2 moe plugin config(s))\n" {
		t.Fatalf("code %d, stdout %q, stderr:\n%s", code, out, errs)
	}
	code, out, errs = runCLI("validate", "--skip-library-check", "--target", "moe-host", f)
	if code != 0 || !strings.Contains(out, "ok, 23 warning(s)") {
		t.Fatalf("--target moe-host: code %d, stdout %q, stderr:\n%s", code, out, errs)
	}
	// moe-host runs access log filters (the status_code_filter at line 72).
	if strings.Contains(errs, "access_log[0].filter") {
		t.Errorf("access log filter reported as unsupported:\n%s", errs)
	}
	for _, want := range []string{
		f + ":153:17: warning: static_resources.listeners[0].filter_chains[0].filters[0].typed_config.route_config.virtual_hosts[0].routes[1].redirect: not supported by moe-host",
		`http_filters[0].typed_config: http filter "envoy.filters.http.cors" of type type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors is not supported by moe-host (golang and router only)`,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks\n%s\ngot:\n%s", want, errs)
		}
	}
}

const golangPath = "static_resources.listeners[0].filter_chains[0].filters[0].typed_config.http_filters[0].typed_config"

// pluginBootstrap is a bootstrap with one golang filter (library_id, plugin_name and
// plugin_config value as given) and a route whose per-route config is routeValue (if any).
func pluginBootstrap(libraryID, pluginName, value, routeValue string) string {
	perRoute := ""
	if routeValue != "" {
		perRoute = `
                typed_per_filter_config:
                  envoy.filters.http.golang:
                    "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.ConfigsPerRoute
                    plugins_config:
                      ` + pluginName + `:
                        config:
                          "@type": type.googleapis.com/xds.type.v3.TypedStruct
                          value: ` + routeValue
	}
	return `
static_resources:
  listeners:
  - name: main
    address: {socket_address: {address: 127.0.0.1, port_value: 10000}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: main
          http_filters:
          - name: envoy.filters.http.golang
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.Config
              library_id: ` + libraryID + `
              library_path: out/libgolang.so
              plugin_name: ` + pluginName + `
              plugin_config:
                "@type": type.googleapis.com/xds.type.v3.TypedStruct
                value: ` + value + `
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {prefix: /}
                route: {cluster: backend}` + perRoute + `
  clusters:
  - name: backend
    type: STATIC
    load_assignment:
      cluster_name: backend
      endpoints:
      - lb_endpoints:
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: 8080}}}
`
}

const routePath = `static_resources.listeners[0].filter_chains[0].filters[0].typed_config.route_config.virtual_hosts[0].routes[0].typed_per_filter_config["envoy.filters.http.golang"]`

func TestPluginConfigsAreValidatedWithTheirPath(t *testing.T) {
	cases := []struct {
		name, lib, plugin, value, route string
		want                            []string // "" = valid
	}{
		{"chain: bad field", "moe", "moe", `{plugins: [{name: sentinel, config: {flow: [{threshold: 0}]}}]}`, "",
			[]string{golangPath + `.plugin_config.value.plugins[0].config.flow[0].threshold: invalid config of plugin "sentinel": field flow[0].threshold: must be > 0`}},
		{"chain: unknown field", "moe", "moe", `{plugins: [{name: limit-req, config: {rate: 1, nodelay: true}}]}`, "",
			[]string{golangPath + `.plugin_config.value.plugins[0].config.nodelay: invalid config of plugin "limit-req": field nodelay: unknown field`}},
		{"chain: custom-decoded field", "moe", "moe", `{plugins: [{name: limit-req, config: {rate: 1, max_delay: soon}}]}`, "",
			[]string{golangPath + `.plugin_config.value.plugins[0].config.max_delay: invalid config of plugin "limit-req": field max_delay: invalid duration "soon"`}},
		{"chain: unknown plugin", "moe", "moe", `{plugins: [{name: nope}]}`, "",
			[]string{golangPath + `.plugin_config.value.plugins[0].name: invalid config of plugin "nope": field plugins[0].name: unknown plugin`}},
		{"single plugin filter", "moe", "limit-req", `{rate: 0}`, "",
			[]string{golangPath + `.plugin_config.value.rate: invalid config of plugin "limit-req": field rate: must be`}},
		{"single plugin filter ok", "moe", "limit-req", `{rate: 5}`, "", nil},
		{"unknown plugin_name", "moe", "limit-reqq", `{}`, "",
			[]string{golangPath + `.plugin_config.value: unknown plugin_name "limit-reqq" for library_id "moe"`}},
		// Per-route entries are checked on their own: {name} and disabled entries need
		// nothing, a config must be valid by itself.
		{"per-route chain ok", "moe", "moe", `{plugins: [{name: limit-req, config: {rate: 1}}]}`,
			`{plugins: [{name: limit-req, disabled: true}, {name: ip-restriction, config: {allow: [10.0.0.0/8]}}]}`, nil},
		{"per-route chain: bad entry", "moe", "moe", `{plugins: [{name: limit-req, config: {rate: 1}}]}`,
			`{plugins: [{name: limit-req, config: {rate: 1, burst: 0}}]}`,
			[]string{routePath + `.plugins_config["moe"].config.value.plugins[0].config.burst: invalid config of plugin "limit-req": field burst: must be between 1`}},
		{"per-route single plugin: bad", "moe", "limit-req", `{rate: 1}`, `{rate: -1}`,
			[]string{routePath + `.plugins_config["limit-req"].config.value.rate: invalid config of plugin "limit-req": field rate`}},
		// What only Init checks is found too (the full parse, Init in check-only mode).
		{"Init: short HMAC secret", "moe", "moe", `{plugins: [{name: jwt-auth, config: {keys: [{secret: "12345"}]}}]}`, "",
			[]string{golangPath + `.plugin_config.value.plugins[0].config.keys[0]: invalid config of plugin "jwt-auth": field keys[0]: HMAC secret of 5 bytes is too short (at least 32 bytes for HS256`}},
		{"Init: no keys", "moe", "moe", `{plugins: [{name: jwt-auth, config: {}}]}`, "",
			[]string{golangPath + `.plugin_config.value.plugins[0].config.keys: invalid config of plugin "jwt-auth": field keys: no key source: set keys or jwks.url or jwks.file`}},
		{"Init: key-auth without consumers", "moe", "moe", `{plugins: [{name: key-auth, config: {}}]}`, "",
			[]string{golangPath + `.plugin_config.value.plugins[0].config.consumers: invalid config of plugin "key-auth": field consumers: at least one consumer is required`}},
		// Every problem, not the first one.
		{"every problem", "moe", "moe", `{plugins: [{name: key-auth, config: {header: x-api-key}}, {name: limit-req, config: {rate: 0}}],
		   consumers: [{name: alice, auth: {key-auth: {keys: []}}}, {name: bob, auth: {key-auth: {keys: [bob-key-0001]}}}]}`, "",
			[]string{
				golangPath + `.plugin_config.value.plugins[0].config.header: invalid config of plugin "key-auth": field header: unknown field`,
				golangPath + `.plugin_config.value.plugins[1].config.rate: invalid config of plugin "limit-req": field rate`,
				golangPath + `.plugin_config.value.consumers[0].auth.key-auth.keys: invalid config of plugin "key-auth": field consumers[0].auth.key-auth.keys: at least one key is required`,
			}},
		// Other libraries carry plugins moectl does not know: not checked.
		{"other library", "moe-e2e", "moe", `{plugins: [{name: e2e-sync}]}`, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "envoy.yaml")
			if err := os.WriteFile(f, []byte(pluginBootstrap(tc.lib, tc.plugin, tc.value, tc.route)), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errs := runCLI("validate", "-skip-library-check", "-c", f)
			if tc.want == nil {
				if code != 0 || errs != "" || !strings.Contains(out, ": ok (") {
					t.Fatalf("code %d, stdout %q, stderr:\n%s", code, out, errs)
				}
				return
			}
			if code != 1 {
				t.Fatalf("code %d, want 1; stderr:\n%s", code, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, ": error: "+w) {
					t.Errorf("stderr lacks\n  %s\ngot:\n%s", w, errs)
				}
			}
			// -skip-plugin-check turns the plugin check off.
			if code, _, errs := runCLI("validate", "-skip-library-check", "-skip-plugin-check", "-c", f); code != 0 {
				t.Errorf("-skip-plugin-check: code %d:\n%s", code, errs)
			}
		})
	}
}

// Validation runs plugins' Init in check-only mode, in this process: jwt-auth starts no
// JWKS fetcher and limit-count acquires no Redis client (which would keep idle
// connections), so, pointed at a local listener, neither connects, and nothing is left
// running.
func TestPluginValidationDoesNoNetworkIO(t *testing.T) {
	ln := fakeframework.NewListener(t)
	addr := ln.Addr()
	cfg := `{plugins: [
	  {name: jwt-auth, config: {jwks: {url: "http://` + addr + `/jwks"}}},
	  {name: limit-count, config: {count: 10, time_window: 1s, redis: {addrs: ["` + addr + `"], min_idle_conns: 2}}}]}`
	f := filepath.Join(t.TempDir(), "envoy.yaml")
	if err := os.WriteFile(f, []byte(pluginBootstrap("moe", "moe", cfg, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	fakeframework.StartsNoGoroutine(t, func() {
		if code, out, errs := runCLI("validate", "--skip-library-check", f); code != 0 || errs != "" {
			t.Fatalf("code %d, stdout %q, stderr:\n%s", code, out, errs)
		}
	})
	ln.WantNoConnection(t, 300*time.Millisecond)
}

// Every YAML file of the repository passes moectl validate, run from the repository root
// (those that are not Envoy or Kubernetes configs are checked where they are used, listed
// here).
func TestEveryYAMLInTheRepositoryValidates(t *testing.T) {
	elsewhere := map[string]string{
		"istio/helm-values-gateway.yaml": "Helm values: istio/istiodcheck renders the chart with them",
		"istio/policy-gateway.yaml":      "a moectl render policy: TestRenderGatewayPolicy",
	}
	noPlugins := map[string]bool{
		"cmd/moectl/internal/compile/testdata/envoy.yaml":   true, // placeholder plugin "x"
		"cmd/moectl/internal/compile/testdata/minimal.yaml": true,
	}
	atRepoRoot(t)
	root := "."
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "out" || d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		if _, ok := elsewhere[filepath.ToSlash(rel)]; ok {
			continue
		}
		args := []string{"validate", "--skip-library-check", "-q", f}
		if noPlugins[filepath.ToSlash(rel)] {
			args = append(args, "--skip-plugin-check")
		}
		if code, _, errs := runCLI(args...); code != 0 {
			t.Errorf("%s: code %d:\n%s", rel, code, errs)
		}
		checked++
	}
	if checked < 20 {
		t.Errorf("only %d YAML files found", checked)
	}
}
