package hostbalance

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// The MOSN experiment again, through moe-host and the real libgolang.so: 10
// loopback upstreams with the simulation's latency shape scaled by
// experimentScale, 16 concurrent clients, each strategy on a route of its own
// (a per-route host-balance config, so each has its own state), the same
// cluster for all.

// experimentBaseSeed draws the servers' base latencies: the draw of the
// simulation's seed 5 row in the README, scaled.
const experimentBaseSeed = 5

const experimentScale = 0.4 // 1000ms -> 400ms, N(50,10) -> N(20,4), N(base,5) -> N(base,2)

// latencyUpstream serves at most 8 requests at once (the rest wait), each
// after a latency drawn from N(base, 5ms*scale), or slowLatency with
// probability slowProb.
type latencyUpstream struct {
	name      string
	port      int
	base      time.Duration
	slow      bool
	sem       chan struct{}
	mu        sync.Mutex
	rng       *rand.Rand
	requests  atomic.Int64
	slowCount atomic.Int64
}

func (u *latencyUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	u.sem <- struct{}{}
	defer func() { <-u.sem }()
	u.requests.Add(1)
	u.mu.Lock()
	d := u.base + time.Duration(u.rng.NormFloat64()*float64(5*time.Millisecond)*experimentScale)
	if u.slow && u.rng.Float64() < 0.1 {
		d = time.Duration(float64(time.Second) * experimentScale)
		u.slowCount.Add(1)
	}
	u.mu.Unlock()
	d = max(d, time.Millisecond)
	waited := time.Since(arrived)
	time.Sleep(d)
	w.Header().Set("x-upstream", u.name)
	// What the experiment measures: the time waited for a free slot plus the
	// drawn service time (x-model-ms); x-upstream-ms is the same with the
	// sleep as it really lasted (late wake-ups on a busy machine included).
	w.Header().Set("x-model-ms", strconv.FormatFloat(float64(waited+d)/1e6, 'f', 3, 64))
	w.Header().Set("x-upstream-ms", strconv.FormatFloat(float64(time.Since(arrived))/1e6, 'f', 3, 64))
	w.Write([]byte("ok\n"))
}

func startLatencyUpstreams(t *testing.T, n int, seed uint64) []*latencyUpstream {
	t.Helper()
	bases := drawBases(mosnExperiment, seed)
	ups := make([]*latencyUpstream, n)
	for i := range ups {
		u := &latencyUpstream{
			name: fmt.Sprintf("s%d", i), slow: i == 0, sem: make(chan struct{}, 8),
			base: time.Duration(float64(bases[i]) * experimentScale),
			rng:  rand.New(rand.NewPCG(seed, uint64(100+i))),
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		u.port = l.Addr().(*net.TCPAddr).Port
		srv := &http.Server{Handler: u}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
		ups[i] = u
	}
	return ups
}

const experimentBootstrap = `
admin:
  address: {socket_address: {address: 127.0.0.1, port_value: {{.AdminPort}}}}
static_resources:
  listeners:
  - name: experiment
    address: {socket_address: {address: 127.0.0.1, port_value: {{.Port}}}}
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: experiment
          http_filters:
          - name: envoy.filters.http.golang
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.Config
              library_id: moe
              library_path: {{.Library}}
              plugin_name: moe
              plugin_config:
                "@type": type.googleapis.com/xds.type.v3.TypedStruct
                value:
                  plugins:
                  - {name: host-balance, config: {hosts: {{.Hosts}}}}
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
          route_config:
            name: experiment
            virtual_hosts:
            - name: experiment
              domains: ["*"]
              routes:
{{- range .Strategies}}
              - name: {{.}}
                match: {prefix: /{{.}}}
                route: {cluster: servers}
                typed_per_filter_config:
                  envoy.filters.http.golang:
                    "@type": type.googleapis.com/envoy.extensions.filters.http.golang.v3alpha.ConfigsPerRoute
                    plugins_config:
                      moe:
                        config:
                          "@type": type.googleapis.com/xds.type.v3.TypedStruct
                          value:
                            plugins:
                            - name: host-balance
                              config: {strategy: {{.}}, hosts: {{$.Hosts}}, peak_ewma: {decay: {{$.Decay}}}, outlier_detection: {consecutive_failures: 0}}
{{- end}}
  clusters:
  - name: servers
    type: STATIC
    connect_timeout: 1s
    load_assignment:
      cluster_name: servers
      endpoints:
      - lb_endpoints:
{{- range .Ports}}
        - endpoint: {address: {socket_address: {address: 127.0.0.1, port_value: {{.}}}}}
{{- end}}
`

// TestE2EExperimentPeakEWMABeatsRoundRobinAndLeastRequest: peak-ewma's p99
// must be below round-robin's and least-request's. The latency compared is
// the one the simulation measures: the upstream's queueing (real) plus the
// drawn service time (x-model-ms), so that late wake-ups and scheduling on
// a busy machine, which no balancer causes, do not decide the comparison.
// The balancer itself is fed what moe-host really measured. The upstream's
// real time and the client's are logged next to it. The strategies take turns in rounds, so a burst of noise hits
// all of them alike.
func TestE2EExperimentPeakEWMABeatsRoundRobinAndLeastRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("experiment: skipped with -short")
	}
	ups := startLatencyUpstreams(t, 10, experimentBaseSeed)
	var hosts, ports []string
	for _, u := range ups {
		hosts = append(hosts, fmt.Sprintf("{address: \"127.0.0.1:%d\"}", u.port))
		ports = append(ports, fmt.Sprint(u.port))
	}
	strategies := []string{"round-robin", "least-request", "peak-ewma"}
	h := hosttest.Start(t, experimentBootstrap, hosttest.Vars{
		"Hosts": "[" + strings.Join(hosts, ", ") + "]", "Ports": ports, "Strategies": strategies,
		"Decay": fmt.Sprintf("%dms", int(10000*experimentScale)),
	})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 10 * time.Second}

	const clients, rounds, perRound = 16, experimentRounds, experimentPerRound
	model, upstream, total := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	start := time.Now()
	for round := 0; round < rounds; round++ {
		for _, s := range strategies {
			m, up, tot := runClients(t, client, h.URL+"/"+s, clients, perRound)
			model[s] = append(model[s], m...)
			upstream[s] = append(upstream[s], up...)
			total[s] = append(total[s], tot...)
		}
	}
	elapsed := time.Since(start)
	var table strings.Builder
	p99 := map[string]float64{}
	for _, s := range strategies {
		m := summarize(model[s])
		p99[s] = m.p99
		fmt.Fprintf(&table, "%-14s model    %v\n%-14s upstream %v\n%-14s client   %v\n", s, m, "", summarize(upstream[s]), "", summarize(total[s]))
	}
	var share strings.Builder
	for _, u := range ups {
		fmt.Fprintf(&share, "%s(base %.1fms%s): %d  ", u.name, float64(u.base)/1e6, map[bool]string{true: ", slow"}[u.slow], u.requests.Load())
	}
	t.Logf("scale %.1f, %d clients, %d requests per strategy in %v; latency in ms:\n%s%s", experimentScale, clients, rounds*perRound, elapsed.Round(time.Millisecond), table.String(), share.String())
	if p99["peak-ewma"] >= p99["round-robin"] || p99["peak-ewma"] >= p99["least-request"] {
		t.Errorf("peak-ewma p99 %.1fms is not below round-robin's %.1fms and least-request's %.1fms", p99["peak-ewma"], p99["round-robin"], p99["least-request"])
	}
}

const experimentRounds, experimentPerRound = 4, 1000

// runClients sends n requests to url from `clients` goroutines, each sending
// its next request when the previous one answered, and returns the
// latencies in ms: the model's, the upstream's and the client's.
func runClients(t *testing.T, c *http.Client, url string, clients, n int) (model, upstream, total []float64) {
	t.Helper()
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				t0 := time.Now()
				code, hdr, _ := hosttest.Fetch(t, c, url)
				d := float64(time.Since(t0)) / 1e6
				up, err := strconv.ParseFloat(hdr.Get("x-upstream-ms"), 64)
				m, err2 := strconv.ParseFloat(hdr.Get("x-model-ms"), 64)
				if code != 200 || err != nil || err2 != nil {
					t.Errorf("%s: status %d, x-upstream-ms %q", url, code, hdr.Get("x-upstream-ms"))
					return
				}
				mu.Lock()
				model, upstream, total = append(model, m), append(upstream, up), append(total, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return model, upstream, total
}
