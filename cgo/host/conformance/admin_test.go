package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/tb"
)

// The admin endpoints as Envoy's (source/server/admin): /stats with Envoy's tag extraction on
// /stats/prometheus, histograms, /clusters, /logging, /help, /reset_counters.

func (h *hostProc) admin(t testing.TB, method, path string) (int, string) {
	t.Helper()
	r, err := http.NewRequest(method, h.AdminURL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.client.Do(r)
	if err != nil {
		t.Fatalf("admin %s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func wantLines(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q", what, w)
		}
	}
	if t.Failed() {
		t.Logf("%s:\n%s", what, tail(text, 6000))
	}
}

func TestAdminStatsAndPrometheusTags(t *testing.T) {
	findBinaries(t)
	a1 := startUpstream(t, "a1")
	h := startHost(t, hostSpec{tmpl: "logstart", listeners: []string{"main"}, data: map[string]any{"A1": a1.Port}})
	for i := 0; i < 3; i++ {
		if r := h.must(t, req{listener: "main", path: "/echo"}); r.status != 200 {
			t.Fatalf("status %d", r.status)
		}
	}
	if r := h.must(t, req{listener: "main", path: "/status/503"}); r.status != 503 {
		t.Fatalf("status %d", r.status)
	}
	listener := "127.0.0.1_" + strconv.Itoa(h.ports["main"])

	// Full names on /stats.
	st := h.stats(t)
	for name, want := range map[string]int64{
		"cluster.backend_a.upstream_rq_200": 3, "cluster.backend_a.upstream_rq_503": 1, "cluster.backend_a.upstream_rq_2xx": 3,
		"cluster.backend_a.upstream_rq_completed": 4, "cluster.backend_a.external.upstream_rq_200": 3,
		"http.logstart.downstream_rq_2xx": 3, "http.logstart.downstream_rq_5xx": 1, "http.logstart.downstream_rq_completed": 4,
		"http.logstart.downstream_rq_http1_total": 4, "listener." + listener + ".http.logstart.downstream_rq_2xx": 3,
		"cluster.backend_a.upstream_rq_total": 4,
	} {
		if st[name] != want {
			t.Errorf("/stats %s = %d, want %d", name, st[name], want)
		}
	}

	// Tags as Envoy's default extractors produce them, in their order: extractors without a
	// prefix token first (response code, class), then those for the first token.
	prom := h.adminGet(t, "/stats/prometheus")
	wantLines(t, "/stats/prometheus", prom,
		"# TYPE envoy_cluster_upstream_rq counter\n",
		`envoy_cluster_upstream_rq{envoy_response_code="200",envoy_cluster_name="backend_a"} 3`+"\n",
		`envoy_cluster_upstream_rq{envoy_response_code="503",envoy_cluster_name="backend_a"} 1`+"\n",
		`envoy_cluster_upstream_rq_xx{envoy_response_code_class="2",envoy_cluster_name="backend_a"} 3`+"\n",
		`envoy_cluster_external_upstream_rq{envoy_response_code="200",envoy_cluster_name="backend_a"} 3`+"\n",
		`envoy_cluster_upstream_rq_total{envoy_cluster_name="backend_a"} 4`+"\n",
		`envoy_http_downstream_rq_xx{envoy_response_code_class="2",envoy_http_conn_manager_prefix="logstart"} 3`+"\n",
		`envoy_listener_http_downstream_rq_xx{envoy_response_code_class="2",envoy_http_conn_manager_prefix="logstart",envoy_listener_address="`+listener+`"} 3`+"\n",
		`envoy_http_downstream_rq_active{envoy_http_conn_manager_prefix="logstart"} 0`+"\n",
		"# TYPE envoy_cluster_upstream_rq_time histogram\n",
		"# TYPE envoy_http_downstream_rq_time histogram\n",
		// moe-host's own stats have no known prefix token: untagged, as Envoy emits unknown names.
		"envoy_moe_host_downstream_cx_total{} ",
	)
	// One TYPE line per tag-extracted name, even with several tag sets.
	if n := strings.Count(prom, "# TYPE envoy_cluster_upstream_rq counter\n"); n != 1 {
		t.Errorf("%d TYPE lines for envoy_cluster_upstream_rq", n)
	}

	// Cumulative histograms: non-decreasing buckets, +Inf and _count equal the samples.
	for _, hist := range []struct{ name, tags string }{
		{"envoy_cluster_upstream_rq_time", `envoy_cluster_name="backend_a"`},
		{"envoy_http_downstream_rq_time", `envoy_http_conn_manager_prefix="logstart"`},
	} {
		re := regexp.MustCompile(regexp.QuoteMeta(hist.name) + `_bucket\{` + regexp.QuoteMeta(hist.tags) + `,le="([^"]+)"\} (\d+)`)
		m := re.FindAllStringSubmatch(prom, -1)
		if len(m) != 20 || m[0][1] != "0.5" || m[19][1] != "+Inf" || m[18][1] != "3600000" {
			t.Fatalf("%s buckets: %q", hist.name, m)
		}
		prev := int64(0)
		for _, b := range m {
			n, _ := strconv.ParseInt(b[2], 10, 64)
			if n < prev {
				t.Errorf("%s: bucket le=%s %d below the previous %d", hist.name, b[1], n, prev)
			}
			prev = n
		}
		if prev != 4 || !strings.Contains(prom, hist.name+"_count{"+hist.tags+"} 4\n") {
			t.Errorf("%s: +Inf %d, want 4 samples and _count 4", hist.name, prev)
		}
	}

	// Text histograms: Envoy's quantile summary (interval,cumulative), buckets on request.
	text := h.adminGet(t, "/stats")
	if !regexp.MustCompile(`(?m)^cluster\.backend_a\.upstream_rq_time: P0\([^,]+,[0-9.e+]+\) P25\(`).MatchString(text) ||
		!regexp.MustCompile(`(?m)^http\.logstart\.downstream_rq_time: P0\(`).MatchString(text) {
		t.Errorf("/stats histogram summaries:\n%s", tail(text, 4000))
	}
	if text := h.adminGet(t, "/stats?filter=upstream_rq_time&histogram_buckets=cumulative"); !strings.Contains(text, "cluster.backend_a.upstream_rq_time: B0.5(") ||
		!strings.Contains(text, " B3600000(") {
		t.Errorf("/stats?histogram_buckets=cumulative:\n%s", text)
	}
	if text := h.adminGet(t, "/stats?type=Counters&filter=^cluster\\.backend_a\\."); strings.Contains(text, "upstream_rq_time:") ||
		!strings.Contains(text, "cluster.backend_a.upstream_rq_200: 3\n") {
		t.Errorf("/stats?type=Counters:\n%s", text)
	}
	if text := h.adminGet(t, "/stats?usedonly&filter=^cluster\\.backend_a\\.upstream_rq_retry"); text != "" {
		t.Errorf("/stats?usedonly shows unused counters:\n%s", text)
	}
	var js struct {
		Stats []json.RawMessage `json:"stats"`
	}
	if err := json.Unmarshal([]byte(h.adminGet(t, "/stats?format=json")), &js); err != nil || len(js.Stats) < 10 {
		t.Errorf("/stats?format=json: %v (%d entries)", err, len(js.Stats))
	}
	if code, body := h.admin(t, "GET", "/stats?filter=("); code != 400 || !strings.Contains(body, "Invalid re2 regex") {
		t.Errorf("/stats?filter=( : %d %q", code, body)
	}

	// POST /reset_counters.
	if code, _ := h.admin(t, "GET", "/reset_counters"); code != 405 {
		t.Errorf("GET /reset_counters: %d, want 405", code)
	}
	if code, body := h.admin(t, "POST", "/reset_counters"); code != 200 || body != "OK\n" {
		t.Errorf("POST /reset_counters: %d %q", code, body)
	}
	if st := h.stats(t); st["cluster.backend_a.upstream_rq_200"] != 0 {
		t.Errorf("after /reset_counters: upstream_rq_200 = %d", st["cluster.backend_a.upstream_rq_200"])
	}
}

// TestAdminStatsTagFlag: --stats-tag adds a fixed tag to every stat (after the default tags
// without a prefix token, before the prefixed ones).
func TestAdminStatsTagFlag(t *testing.T) {
	findBinaries(t)
	a1 := startUpstream(t, "a1")
	h := startHost(t, hostSpec{tmpl: "logstart", listeners: []string{"main"}, data: map[string]any{"A1": a1.Port},
		args: []string{"--stats-tag", "region:eu"}})
	h.must(t, req{listener: "main", path: "/echo"})
	wantLines(t, "/stats/prometheus", h.adminGet(t, "/stats/prometheus"),
		`envoy_cluster_upstream_rq{envoy_response_code="200",region="eu",envoy_cluster_name="backend_a"} 1`+"\n",
		`envoy_moe_host_downstream_cx_total{region="eu"} `)
}

func TestAdminClusters(t *testing.T) {
	findBinaries(t)
	a1 := startUpstream(t, "a1")
	h := startHost(t, hostSpec{tmpl: "logstart", listeners: []string{"main"}, data: map[string]any{"A1": a1.Port}})
	h.must(t, req{listener: "main", path: "/echo"})
	h.must(t, req{listener: "main", path: "/status/500"})
	host := fmt.Sprintf("127.0.0.1:%d", a1.Port)
	text := h.adminGet(t, "/clusters")
	wantLines(t, "/clusters", text,
		"backend_a::observability_name::backend_a\n",
		"backend_a::default_priority::max_connections::1024\n",
		"backend_a::default_priority::max_retries::3\n",
		"backend_a::high_priority::max_requests::1024\n",
		"backend_a::added_via_api::false\n",
		"backend_a::"+host+"::rq_total::2\n",
		"backend_a::"+host+"::rq_success::1\n",
		"backend_a::"+host+"::rq_error::1\n",
		"backend_a::"+host+"::cx_total::",
		"backend_a::"+host+"::rq_active::0\n",
		"backend_a::"+host+"::health_flags::healthy\n",
		"backend_a::"+host+"::weight::1\n",
		"backend_a::"+host+"::success_rate::-1\n")
	if text := h.adminGet(t, "/clusters?filter=^nomatch"); text != "" {
		t.Errorf("/clusters?filter=^nomatch: %q", text)
	}
	var cj struct {
		ClusterStatuses []struct {
			Name         string `json:"name"`
			HostStatuses []struct {
				Address struct {
					SocketAddress struct {
						Address   string `json:"address"`
						PortValue int    `json:"port_value"`
					} `json:"socket_address"`
				} `json:"address"`
				Stats []struct {
					Name  string `json:"name"`
					Value string `json:"value"`
				} `json:"stats"`
			} `json:"host_statuses"`
		} `json:"cluster_statuses"`
	}
	if err := json.Unmarshal([]byte(h.adminGet(t, "/clusters?format=json")), &cj); err != nil || len(cj.ClusterStatuses) != 1 ||
		cj.ClusterStatuses[0].Name != "backend_a" || len(cj.ClusterStatuses[0].HostStatuses) != 1 ||
		cj.ClusterStatuses[0].HostStatuses[0].Address.SocketAddress.PortValue != a1.Port {
		t.Fatalf("/clusters?format=json: %v %+v", err, cj)
	}
}

// TestAdminConfigDump: /config_dump is the bootstrap as envoy.admin.v3.ConfigDump (moectl
// builds it from the YAML): the bootstrap, then the static clusters, listeners, route configs.
func TestAdminConfigDump(t *testing.T) {
	findBinaries(t)
	a1 := startUpstream(t, "a1")
	h := startHost(t, hostSpec{tmpl: "logstart", listeners: []string{"main"}, data: map[string]any{"A1": a1.Port}})
	var dump struct {
		Configs []struct {
			Type      string `json:"@type"`
			Bootstrap struct {
				StaticResources struct {
					Clusters []struct {
						Name string `json:"name"`
					} `json:"clusters"`
				} `json:"static_resources"`
			} `json:"bootstrap"`
			StaticClusters []struct {
				Cluster struct {
					Name string `json:"name"`
				} `json:"cluster"`
			} `json:"static_clusters"`
			StaticRouteConfigs []struct {
				RouteConfig struct {
					Name string `json:"name"`
				} `json:"route_config"`
			} `json:"static_route_configs"`
		} `json:"configs"`
	}
	body := h.adminGet(t, "/config_dump")
	if err := json.Unmarshal([]byte(body), &dump); err != nil || len(dump.Configs) != 6 {
		t.Fatalf("/config_dump: %v\n%s", err, tail(body, 2000))
	}
	c := dump.Configs
	if c[0].Type != "type.googleapis.com/envoy.admin.v3.BootstrapConfigDump" || c[0].Bootstrap.StaticResources.Clusters[0].Name != "backend_a" ||
		c[1].Type != "type.googleapis.com/envoy.admin.v3.ClustersConfigDump" || c[1].StaticClusters[0].Cluster.Name != "backend_a" ||
		c[3].Type != "type.googleapis.com/envoy.admin.v3.RoutesConfigDump" || c[3].StaticRouteConfigs[0].RouteConfig.Name != "logstart_routes" {
		t.Errorf("/config_dump: %+v", c)
	}
}

func TestAdminLoggingAndHelp(t *testing.T) {
	findBinaries(t)
	a1 := startUpstream(t, "a1")
	h := startHost(t, hostSpec{tmpl: "logstart", listeners: []string{"main"}, data: map[string]any{"A1": a1.Port}})

	// /logging mutates state: POST only (AdminImpl::makeRequest).
	if code, body := h.admin(t, "GET", "/logging"); code != 405 || body != "Method GET not allowed, POST required." {
		t.Errorf("GET /logging: %d %q", code, body)
	}
	code, body := h.admin(t, "POST", "/logging")
	if code != 200 || !strings.HasPrefix(body, "active loggers:\n  a2a: info\n  admin: info\n") || !strings.Contains(body, "  golang: info\n") {
		t.Errorf("POST /logging: %d\n%s", code, body)
	}
	// One logger; Go polls the golang logger's level (envoyGoFilterLogLevel) every second.
	if code, body := h.admin(t, "POST", "/logging?golang=debug"); code != 200 || !strings.Contains(body, "  golang: debug\n") || !strings.Contains(body, "  http: info\n") {
		t.Errorf("POST /logging?golang=debug: %d\n%s", code, body)
	}
	level := ""
	if !tb.Poll(5*time.Second, func() bool {
		level = h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-basic", "1")}).get("test-log-level")
		return level == "debug"
	}) {
		t.Fatalf("Go's log level is still %q after /logging?golang=debug", level)
	}
	// All loggers; several with paths=.
	if _, body := h.admin(t, "POST", "/logging?level=warning"); !strings.Contains(body, "  golang: warning\n") || !strings.Contains(body, "  upstream: warning\n") {
		t.Errorf("POST /logging?level=warning:\n%s", body)
	}
	if _, body := h.admin(t, "POST", "/logging?paths=http:error,main:trace"); !strings.Contains(body, "  http: error\n") || !strings.Contains(body, "  main: trace\n") {
		t.Errorf("POST /logging?paths=...:\n%s", body)
	}
	if code, body := h.admin(t, "POST", "/logging?nosuchlogger=info"); code != 400 || !strings.HasPrefix(body, "error: unknown logger name\n\nusage: /logging?<name>=<level>") {
		t.Errorf("POST /logging?nosuchlogger=info: %d\n%s", code, body)
	}

	// /help and the 404 page list the commands, sorted, POST marked.
	help := h.adminGet(t, "/help")
	wantLines(t, "/help", help, "admin commands are:\n", "  /clusters: upstream cluster status\n", "  /logging (POST): query/change logging levels\n",
		"  /stats/prometheus: print server stats in prometheus format\n", "  /quitquitquit (POST): exit the server\n")
	if i, j := strings.Index(help, "  /clusters:"), strings.Index(help, "  /stats:"); i < 0 || j < 0 || i > j {
		t.Errorf("/help not sorted by prefix")
	}
	if code, body := h.admin(t, "GET", "/nosuch"); code != 404 || !strings.HasPrefix(body, "invalid path. admin commands are:\n") {
		t.Errorf("GET /nosuch: %d %q", code, body)
	}
	var info struct {
		Version string `json:"version"`
		State   string `json:"state"`
	}
	if err := json.Unmarshal([]byte(h.adminGet(t, "/server_info")), &info); err != nil || info.State != "LIVE" ||
		!strings.Contains(info.Version, "/1.39.0/") {
		t.Errorf("/server_info: %v %+v", err, info)
	}
}
