package ldcroute_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/echo"
	"github.com/moeproxy/moe/shared/testing/hosttest"
)

const example = "envoy/examples/ldc-route.yaml"

// startExample runs the documented example with its upstreams on test ports
// (rz01 is the example's 8080 upstream, named "upstream") and its admin API
// on a free port; it returns the host and the admin API's base URL.
func startExample(t *testing.T, replace map[string]string) (*hosttest.Host, string) {
	t.Helper()
	admin := fmt.Sprintf("127.0.0.1:%d", hosttest.FreePort(t))
	r := map[string]string{
		"port_value: 9002":          fmt.Sprintf("port_value: %d", echo.Start(t, "echo-9002").Port),
		"port_value: 9003":          fmt.Sprintf("port_value: %d", echo.Start(t, "echo-9003").Port),
		`address: "127.0.0.1:9980"`: `address: "` + admin + `"`,
	}
	for k, v := range replace {
		r[k] = v
	}
	return hosttest.StartExample(t, example, hosttest.ExampleOptions{Replace: r}), "http://" + admin
}

var client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}

// where sends one request and returns the upstream that answered and the
// x-ldc-unit response header.
func where(t *testing.T, h *hosttest.Host, kv ...string) (string, string) {
	t.Helper()
	code, hdr, body := hosttest.Fetch(t, client, h.URL+"/", kv...)
	if code != 200 {
		t.Fatalf("%v: %d %q", kv, code, body)
	}
	return hdr.Get("x-upstream"), hdr.Get("x-ldc-unit")
}

func post(t *testing.T, url string) string {
	t.Helper()
	resp, err := client.Post(url, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// The README's example: each slot range reaches its own upstream, the unit
// is on the response and in the upstream request, the admin API moves a
// unit's users to its fallbacks and back.
func TestE2EExample(t *testing.T) {
	h, admin := startExample(t, nil)
	for _, tc := range []struct{ uid, upstream, unit string }{
		{"2088001234", "echo-9002", "RZ02"}, {"7", "upstream", "RZ01"}, {"29", "upstream", "RZ01"},
		{"30", "echo-9002", "RZ02"}, {"60", "echo-9003", "RZ03"}, {"12345678901234567899", "echo-9003", "RZ03"},
	} {
		if up, unit := where(t, h, "x-uid", tc.uid); up != tc.upstream || unit != tc.unit {
			t.Errorf("uid %s: %s %s, want %s %s", tc.uid, up, unit, tc.upstream, tc.unit)
		}
	}
	if up, unit := where(t, h, "cookie", "uid=7"); up != "upstream" || unit != "RZ01" {
		t.Errorf("uid cookie: %s %s", up, unit)
	}
	if up, unit := where(t, h); up != "upstream" || unit != "RZ01" {
		t.Errorf("no uid: %s %s", up, unit)
	}
	// The upstream sees the unit too.
	resp, _ := hosttest.Get(t, h.URL+"/", "x-uid", "45")
	if e := hosttest.DecodeEcho(t, resp); e.Header("x-ldc-unit") != "RZ02" || e.Header("x-moe-cluster") != "rz02" {
		t.Errorf("upstream headers %v", e.Headers)
	}

	// The admin API.
	if body := post(t, admin+"/units/RZ02/down"); !strings.Contains(body, `"serving":"RZ03"`) {
		t.Fatalf("RZ02 down: %s", body)
	}
	if up, unit := where(t, h, "x-uid", "2088001234"); up != "echo-9003" || unit != "RZ03" {
		t.Errorf("RZ02 down: %s %s", up, unit)
	}
	post(t, admin+"/units/RZ03/down")
	if up, unit := where(t, h, "x-uid", "2088001234"); up != "upstream" || unit != "RZ01" {
		t.Errorf("RZ02, RZ03 down: %s %s", up, unit)
	}
	post(t, admin+"/units/RZ01/down")
	code, _, body := hosttest.Fetch(t, client, h.URL+"/", "x-uid", "2088001234")
	if code != 503 || body != "unit RZ02 and its fallbacks are down\n" {
		t.Errorf("all down: %d %q", code, body)
	}
	for _, u := range []string{"RZ01", "RZ02", "RZ03"} {
		post(t, admin+"/units/"+u+"/reset")
	}
	if up, unit := where(t, h, "x-uid", "2088001234"); up != "echo-9002" || unit != "RZ02" {
		t.Errorf("after reset: %s %s", up, unit)
	}
	var list struct {
		Units []struct {
			Name string `json:"name"`
			Down bool   `json:"down"`
		} `json:"units"`
	}
	resp, err := client.Get(admin + "/units")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if len(list.Units) != 3 || list.Units[1].Name != "RZ02" || list.Units[1].Down {
		t.Errorf("GET /units: %+v", list)
	}

	for name, want := range map[string]int64{
		"moe_ldc_route_routed_RZ02": 4, "moe_ldc_route_routed_RZ03": 3, "moe_ldc_route_routed_RZ01": 5,
		"moe_ldc_route_fallback": 2, "moe_ldc_route_no_uid": 1, "moe_ldc_route_rejected_all_down": 1,
		"moe_ldc_route_admin_changes": 6, "moe_ldc_route_unit_down_RZ02": 0,
	} {
		if got := h.Counter(t, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	// The admin API stops with moe-host.
	h.Stop(t)
	if _, err := net.DialTimeout("tcp", strings.TrimPrefix(admin, "http://"), time.Second); err == nil {
		t.Error("admin API still listening after moe-host stopped")
	}
}

// Bad input through moe-host: invalid and huge ids, malformed cookies,
// repeated headers, a spoofed cluster header.
func TestE2EBadInput(t *testing.T) {
	h, _ := startExample(t, nil)
	for _, tc := range []struct {
		name     string
		kv       []string
		upstream string
	}{
		{"not a number: default unit", []string{"x-uid", "12;DROP TABLE"}, "upstream"},
		{"huge id (10 KiB): default unit", []string{"x-uid", strings.Repeat("9", 10<<10)}, "upstream"},
		{"malformed cookie: no uid", []string{"cookie", ";;uid;;=99;"}, "upstream"},
		{"spoofed x-moe-cluster is replaced", []string{"x-uid", "1", "x-moe-cluster", "rz03"}, "upstream"},
	} {
		if up, _ := where(t, h, tc.kv...); up != tc.upstream {
			t.Errorf("%s: %s, want %s", tc.name, up, tc.upstream)
		}
	}
	resp, _ := hosttest.Get(t, h.URL+"/", "x-uid", "99", "x-uid", "1")
	if resp.Header.Get("x-ldc-unit") != "RZ03" {
		t.Errorf("repeated x-uid: the first value counts, got %v", resp.Header.Get("x-ldc-unit"))
	}
	resp.Body.Close()
	if n := h.Counter(t, "moe_ldc_route_invalid_uid"); n != 2 {
		t.Errorf("invalid_uid = %d", n)
	}
}

// A unit whose cluster is not in the route table: Envoy answers 503
// (cluster_not_found) and the plugin counts it; a unit whose hosts are all
// down: Envoy's 503 (the plugin only knows the marks, not health).
func TestE2EMissingClusterAndUnitDown(t *testing.T) {
	down := fmt.Sprintf("port_value: %d", hosttest.ClosedPort(t))
	h, _ := startExample(t, map[string]string{"{name: RZ03, cluster: rz03,": "{name: RZ03, cluster: rz09,"})
	if code, _, body := hosttest.Fetch(t, client, h.URL+"/", "x-uid", "60"); code != 503 || body != "" {
		t.Fatalf("missing cluster: %d %q", code, body)
	}
	if n := h.Counter(t, "moe_ldc_route_cluster_not_found"); n != 1 {
		t.Errorf("cluster_not_found = %d", n)
	}
	if !strings.Contains(h.Output(), "Envoy has no cluster for unit RZ03") {
		t.Error("no warning naming the unit")
	}
	h.Stop(t)
	// rz02's only host refuses connections.
	admin := fmt.Sprintf("127.0.0.1:%d", hosttest.FreePort(t))
	h = hosttest.StartExample(t, example, hosttest.ExampleOptions{Replace: map[string]string{
		"port_value: 9002": down, "port_value: 9003": fmt.Sprintf("port_value: %d", echo.Start(t, "echo-9003").Port),
		`address: "127.0.0.1:9980"`: `address: "` + admin + `"`,
	}})
	if code, _, body := hosttest.Fetch(t, client, h.URL+"/", "x-uid", "30"); code != 503 || !strings.Contains(body, "upstream connect error") {
		t.Fatalf("rz02 down: %d %q", code, body)
	}
	// Marking it down moves its users to RZ03.
	post(t, "http://"+admin+"/units/RZ02/down")
	if up, _ := where(t, h, "x-uid", "30"); up != "echo-9003" {
		t.Fatalf("after marking RZ02 down: %s", up)
	}
}

// The admin address taken by another process: moe-host refuses the config
// at start, naming the plugin and the field (Envoy would keep its previous
// config).
func TestE2EAdminAddressInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	raw, err := os.ReadFile(filepath.Join(hosttest.RepoRoot(t), example))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := strings.NewReplacer(
		"port_value: 10000", "port_value: {{.Port}}", "port_value: 9901", "port_value: {{.AdminPort}}",
		"library_path: out/libgolang.so", "library_path: {{.Library}}",
		`address: "127.0.0.1:9980"`, `address: "`+l.Addr().String()+`"`,
	).Replace(string(raw))
	out := hosttest.StartExpectFailure(t, tmpl, nil)
	for _, want := range []string{"ldc-route", "admin.address", "address already in use"} {
		if !strings.Contains(out, want) {
			t.Errorf("host output does not name %q:\n%s", want, out)
		}
	}
}
