package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moeproxy/moe/shared/metrics"
	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/redistest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// services are what the configs need besides the echo upstream, started once for the run.
type services struct {
	redisAddr string
	otlp      *otlpReceiver
}

func startServices(t tb.TB, cs []Config) *services {
	t.Helper()
	s := &services{}
	for _, c := range cs {
		if c.Redis && s.redisAddr == "" {
			s.redisAddr = redistest.Start(t).Addr()
		}
		if c.OTLP && s.otlp == nil {
			s.otlp = startOTLP(t)
		}
	}
	return s
}

// startHost runs c's bootstrap through hosttest (the code every end-to-end test uses): an echo
// upstream, the fixed addresses replaced by free ports, the library built by make, the
// loopback-only guard; the host stops, with hosttest's end-of-life checks, at t's end.
func startHost(t tb.TB, c Config, s *services, o hosttest.Options) *hosttest.Host {
	t.Helper()
	repl := map[string]string{}
	if c.Redis {
		repl[fileRedisAddr] = s.redisAddr
	}
	if c.OTLP {
		repl[fileOTLPURL] = s.otlp.URL
	}
	if c.AccessLog {
		repl[fileAccessLog] = filepath.Join(t.TempDir(), "access.log")
	}
	// Production's batched metric updates, not the unbatched ones of test hosts.
	o.Env = append(o.Env, metrics.FlushIntervalEnv+"="+metrics.DefaultFlushInterval.String())
	if !hosttest.EnvHas(o.Env, "GODEBUG") {
		// The libraries' own GODEBUG defaults (cgocheck=0, build/cshared.mk), not the
		// pointer check test hosts get (hosttest.CgoCheckEnv).
		o.Env = append(o.Env, "GODEBUG=")
	}
	return hosttest.StartExample(t, c.File, hosttest.ExampleOptions{Replace: repl, Library: c.Library, Host: o})
}

// client sends the benchmark's request over one keep-alive connection, one at a time.
type client struct {
	c   *http.Client
	req *http.Request
}

func newClient(baseURL string, headers map[string]string) (*client, error) {
	req, err := http.NewRequest(http.MethodGet, baseURL+requestPath, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 1, DisableCompression: true}
	// Generous: under callgrind a request takes milliseconds.
	return &client{c: &http.Client{Transport: tr, Timeout: 30 * time.Second}, req: req}, nil
}

// run sends n requests, each of which must be answered 200 with the echo's body, and stops
// at the first failure or when d has passed.
func (c *client) run(n int, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for i := 0; i < n; i++ {
		resp, err := c.c.Do(c.req.WithContext(ctx))
		if err != nil {
			return fmt.Errorf("request %d of %d: %w", i+1, n, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("request %d of %d: body: %w", i+1, n, err)
		}
		if resp.StatusCode != http.StatusOK || string(body) != responseBody {
			return fmt.Errorf("request %d of %d: status %d, body %q (the config must let the benchmark's request pass)",
				i+1, n, resp.StatusCode, trim(string(body), 200))
		}
	}
	return nil
}

func (c *client) close() { c.c.CloseIdleConnections() }

// settle waits for the streams just answered to finish their lifecycle in the host (log,
// destroy), so that counters read next include them.
func settle() { time.Sleep(150 * time.Millisecond) }

// counters reads admin /stats as integers (histogram lines are skipped).
func counters(adminURL string) (map[string]int64, error) {
	c := &http.Client{Timeout: 30 * time.Second}
	resp, err := c.Get(adminURL + "/stats")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return parseStats(string(raw)), nil
}

// parseStats reads "name: value" lines; values that are not integers are skipped.
func parseStats(s string) map[string]int64 {
	out := map[string]int64{}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			out[k] = n
		}
	}
	return out
}

// checkNotMoved fails t when one of c.MustNotMove grew between before and after.
func checkNotMoved(t tb.TB, c Config, before, after map[string]int64) {
	t.Helper()
	for _, k := range c.MustNotMove {
		if _, ok := after[k]; !ok {
			t.Errorf("%s: /stats has no %s (renamed?)", c.ID, k)
		} else if d := after[k] - before[k]; d != 0 {
			t.Errorf("%s: %s moved by %d while measuring (the requests did not take the configured path)", c.ID, k, d)
		}
	}
}

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
