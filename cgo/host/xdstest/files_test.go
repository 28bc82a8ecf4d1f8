// Package xdstest drives moe-host's filesystem xDS (cgo/host/xds.h, listener_manager.h,
// route_config_provider.h): listeners, routes and clusters read from files the way Envoy's
// path_config_source reads them, replaced while traffic flows. Every file written here is an
// Envoy DiscoveryResponse and goes through `moectl validate` first, so the same files work in
// a real Envoy.
//
// The host runs the real libgolang.so (key-auth, limit-req, header-mutation) through
// shared/testing/hosttest; the upstream is the echo upstream. Loopback only.
package xdstest

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// drainTimeS is the host's --drain-time-s: connections of a replaced listener version are
// closed at most this long after the update.
const drainTimeS = 2

// files is the directory of a test's xDS files and the bootstrap that names them.
type files struct {
	t   *testing.T
	dir string
}

func newFiles(t *testing.T) *files { return &files{t: t, dir: t.TempDir()} }

func (f *files) path(name string) string { return filepath.Join(f.dir, name) }

// put moves content into place as name the way Envoy wants updates made: written to another
// file of the directory, then renamed onto the path (IN_MOVED_TO). validate runs `moectl
// validate` on it first (what a real Envoy would accept); invalid-on-purpose files skip it.
func (f *files) put(name, content string, validate bool) {
	f.t.Helper()
	dst := f.path(name)
	tmp := filepath.Join(filepath.Dir(dst), "."+filepath.Base(dst)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	if validate {
		f.validate(tmp, name)
	}
	if err := os.Rename(tmp, dst); err != nil {
		f.t.Fatal(err)
	}
}

// validate checks a resource file with out/moectl validate (Envoy's protos, moe plugin
// configs). The check reads the file under its final extension.
func (f *files) validate(path, name string) {
	f.t.Helper()
	moectl := hosttest.Require(f.t, "moectl")
	named := path + filepath.Ext(name)
	if err := os.Link(path, named); err != nil {
		f.t.Fatal(err)
	}
	defer os.Remove(named)
	out, err := exec.Command(moectl, "validate", "--skip-library-check", "-q", named).CombinedOutput()
	if err != nil {
		f.t.Fatalf("moectl validate %s: %v\n%s", name, err, out)
	}
}

// bootstrap is the Envoy bootstrap: admin, node, and LDS/CDS from this directory.
func (f *files) bootstrap() string {
	return fmt.Sprintf(`admin:
  address:
    socket_address: {address: 127.0.0.1, port_value: {{.AdminPort}}}
node: {id: xdstest, cluster: moe}
dynamic_resources:
  lds_config:
    path_config_source: {path: %s}
  cds_config:
    path_config_source: {path: %s}
`, f.path("lds.yaml"), f.path("cds.yaml"))
}

// start validates the bootstrap and starts the host on it; the xDS files must be in place.
func (f *files) start(opts ...hosttest.Options) *hosttest.Host {
	f.t.Helper()
	o := hosttest.Options{Args: []string{"--drain-time-s", strconv.Itoa(drainTimeS)}}
	if len(opts) > 0 {
		o = opts[0]
		o.Args = append(o.Args, "--drain-time-s", strconv.Itoa(drainTimeS))
	}
	boot := f.path("envoy.yaml")
	if err := os.WriteFile(boot, []byte(strings.ReplaceAll(f.bootstrap(), "{{.AdminPort}}", "9901")), 0o644); err != nil {
		f.t.Fatal(err)
	}
	f.validate(boot, "envoy.yaml")
	return hosttest.Start(f.t, f.bootstrap(), nil, o)
}

// cds is a CDS file: clusters name -> port on 127.0.0.1.
func cds(version string, clusters map[string]int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version_info: %q\nresources:\n", version)
	for _, name := range sortedKeys(clusters) {
		fmt.Fprintf(&b, `- "@type": type.googleapis.com/envoy.config.cluster.v3.Cluster
  name: %s
  type: STATIC
  connect_timeout: 1s
  load_assignment:
    cluster_name: %s
    endpoints:
    - lb_endpoints:
      - endpoint:
          address:
            socket_address: {address: 127.0.0.1, port_value: %d}
`, name, name, clusters[name])
	}
	return b.String()
}

// listener is the LDS resource of one listener on port: an http connection manager whose route
// table comes from rdsPath; its first golang filter is header-mutation on its own, stamping
// x-listener-version: stamp on every response (filter-level config: it changes only with the
// listener); then moe, whose plugins come per route (filterPlugins at the filter level).
func listener(name string, port int, stamp, filterPlugins, rdsPath, library string) string {
	return fmt.Sprintf(`- "@type": type.googleapis.com/envoy.config.listener.v3.Listener
  name: %s
  address:
    socket_address: {address: 127.0.0.1, port_value: %d}
  filter_chains:
  - filters:
    - name: envoy.filters.network.http_connection_manager
      typed_config:
        "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
        stat_prefix: %s
        rds:
          route_config_name: routes
          config_source:
            path_config_source: {path: %s}
        http_filters:
        - name: moe.stamp
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.Config
            library_id: moe
            library_path: %s
            plugin_name: header-mutation
            plugin_config:
              "@type": type.googleapis.com/xds.type.v3.TypedStruct
              value:
                response:
                - {op: set, name: x-listener-version, value: %q}
        - name: envoy.filters.http.golang
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.Config
            library_id: moe
            library_path: %s
            plugin_name: moe
            plugin_config:
              "@type": type.googleapis.com/xds.type.v3.TypedStruct
              value:
                plugins: %s
        - name: envoy.filters.http.router
          typed_config:
            "@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router
`, name, port, name, rdsPath, library, stamp, library, filterPlugins)
}

func lds(version string, listeners ...string) string {
	return fmt.Sprintf("version_info: %q\nresources:\n%s", version, strings.Join(listeners, ""))
}

// routeSpec is one version of the route table "routes".
type routeSpec struct {
	version string   // stamped as x-config-version by the virtual host's header-mutation
	keys    []string // key-auth keys of consumer "client"
	// hotLimit > 0 adds limit-req on /hot (rate and burst per x-client).
	hotLimit int
	cluster  string
	// invalidKey makes key-auth's config invalid (a key under 8 bytes): Go's parser refuses it.
	invalidKey bool
}

func rds(s routeSpec) string {
	keys := make([]string, len(s.keys))
	for i, k := range s.keys {
		keys[i] = strconv.Quote(k)
	}
	if s.invalidKey {
		keys = append(keys, `"short"`)
	}
	cluster := s.cluster
	if cluster == "" {
		cluster = "echo"
	}
	hot := ""
	if s.hotLimit > 0 {
		hot = fmt.Sprintf(`
      typed_per_filter_config:
        envoy.filters.http.golang:
          "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.ConfigsPerRoute
          plugins_config:
            moe:
              config:
                "@type": type.googleapis.com/xds.type.v3.TypedStruct
                value:
                  plugins:
                  - name: limit-req
                    config: {rate: %d, burst: %d, key: "$header_x-client"}`, s.hotLimit, s.hotLimit)
	}
	return fmt.Sprintf(`version_info: %q
resources:
- "@type": type.googleapis.com/envoy.config.route.v3.RouteConfiguration
  name: routes
  virtual_hosts:
  - name: all
    domains: ["*"]
    typed_per_filter_config:
      envoy.filters.http.golang:
        "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.ConfigsPerRoute
        plugins_config:
          moe:
            config:
              "@type": type.googleapis.com/xds.type.v3.TypedStruct
              value:
                plugins:
                - name: key-auth
                  config:
                    sources: ["header:x-api-key"]
                    consumers:
                    - {name: client, keys: [%s]}
                - name: header-mutation
                  config:
                    response:
                    - {op: set, name: x-config-version, value: %q}
    routes:
    - name: hot
      match: {prefix: /hot}
      route: {cluster: %s}%s
    - name: default
      match: {prefix: /}
      route: {cluster: %s}
`, s.version, strings.Join(keys, ", "), s.version, cluster, hot, cluster)
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// waitStat polls admin /stats until name reaches at least want (within d), and returns when
// it saw it. It fails the test on timeout.
func waitStat(t *testing.T, h *hosttest.Host, name string, want int64, d time.Duration) time.Time {
	t.Helper()
	c := &http.Client{Timeout: 2 * time.Second}
	reached := func() bool {
		resp, err := c.Get(h.AdminURL + "/stats?filter=^" + strings.ReplaceAll(name, ".", `\.`) + "$")
		if err != nil {
			return false
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			if k, v, ok := strings.Cut(line, ": "); ok && k == name {
				if n, _ := strconv.ParseInt(v, 10, 64); n >= want {
					return true
				}
			}
		}
		return false
	}
	if !tb.Poll(d, reached) {
		t.Fatalf("%s did not reach %d within %v; stats: %v\noutput:\n%s", name, want, d, statsMatching(t, h, name), tail(h.Output()))
	}
	return time.Now()
}

func statsMatching(t *testing.T, h *hosttest.Host, prefix string) map[string]string {
	out := map[string]string{}
	if i := strings.LastIndex(prefix, "."); i > 0 {
		prefix = prefix[:i]
	}
	for k, v := range h.Stats(t) {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

func tail(s string) string {
	if len(s) > 6000 {
		return s[len(s)-6000:]
	}
	return s
}

// get sends one request and returns status, headers and body; a transport error fails.
func get(t *testing.T, c *http.Client, url string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}
