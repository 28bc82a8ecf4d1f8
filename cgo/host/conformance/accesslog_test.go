package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/tb"
)

// The connection manager's access logs (source/extensions/access_loggers, source/common/
// formatter): Envoy's command operators in text and JSON formats, the default format, every
// log type, file reopening on SIGUSR1 and POST /reopen_logs.

// waitLines returns the lines of path that contain every one of parts, waiting up to d for n of
// them.
func waitLines(t *testing.T, path string, n int, d time.Duration, parts ...string) []string {
	t.Helper()
	var got []string
	if !tb.Poll(d, func() bool {
		got = got[:0]
		if b, err := os.ReadFile(path); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				ok := l != ""
				for _, p := range parts {
					ok = ok && strings.Contains(l, p)
				}
				if ok {
					got = append(got, l)
				}
			}
		}
		return len(got) >= n
	}) {
		b, _ := os.ReadFile(path)
		t.Fatalf("want %d lines with %q in %s, got %d:\n%s", n, parts, path, len(got), b)
	}
	return got
}

func TestAccessLog(t *testing.T) {
	findBinaries(t)
	a1 := startUpstream(t, "a1")
	dir := t.TempDir()
	textLog, jsonLog := filepath.Join(dir, "text.log"), filepath.Join(dir, "json.log")
	h := startHost(t, hostSpec{tmpl: "accesslog", listeners: []string{"main"},
		data: map[string]any{"A1": a1.Port, "TextLog": textLog, "JSONLog": jsonLog, "FilteredLog": filepath.Join(dir, "filtered.log")},
		args: []string{"--file-flush-interval-msec", "50"}})
	up := fmt.Sprintf("127.0.0.1:%d", a1.Port)

	t.Run("Text", func(t *testing.T) {
		id := "alog-text"
		r := h.must(t, req{listener: "main", method: "POST", path: "/echo?q=1", body: "hello",
			headers: hdrs("x-test-id", id, "user-agent", "moe-test", "x-test-dymeta", "1", "x-test-filterstate", "1")})
		if r.status != 200 {
			t.Fatalf("status %d", r.status)
		}
		line := waitLines(t, textLog, 1, 5*time.Second, id+" type=DownstreamEnd ")[0]
		tx := len(r.body)
		for _, want := range []string{
			" year=" + strconv.Itoa(time.Now().UTC().Year()) + " ", " method=POST ", " path=/echo?q=1 ", " missing=- ", " ua3=moe ",
			" ctype=application/json ", " proto=HTTP/1.1 ", " code=200 ", " flags=- ", " details=via_upstream ", " rx=5 ",
			" tx=" + strconv.Itoa(tx) + " ", " up=" + up + " ", " cluster=backend_a ", " remote_ip=127.0.0.1 ", " route=logs_route ",
			" fs=fs-value ", ` fs_typed="fs-value" `, " md_key=value-from-conf ", ` md={"key":"value-from-conf","num":42} `,
			" pct=100% end",
		} {
			if !strings.Contains(line, want) {
				t.Errorf("text line lacks %q:\n%s", want, line)
			}
		}
		if !regexp.MustCompile(` dur=\d+ `).MatchString(line) || !regexp.MustCompile(` remote=127\.0\.0\.1:\d+ `).MatchString(line) {
			t.Errorf("duration / remote address: %s", line)
		}
		// flush_access_log_on_new_request: the connection manager's loggers log at the start too,
		// before there is a response.
		start := waitLines(t, textLog, 1, 5*time.Second, id+" type=DownstreamStart ")[0]
		if !strings.Contains(start, " code=0 ") || !strings.Contains(start, " up=- ") || !strings.Contains(start, " flags=- ") {
			t.Errorf("DownstreamStart line: %s", start)
		}
	})

	t.Run("JSON", func(t *testing.T) {
		id := "alog-json"
		h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-id", id, "x-test-dymeta", "1", "x-test-filterstate", "1")})
		line := waitLines(t, jsonLog, 1, 5*time.Second, `"id":"`+id+`"`, `"type":"DownstreamEnd"`)[0]
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q: %v", line, err)
		}
		// One command keeps its type (numbers, null); several make a string, "-" for a missing one.
		if m["code"] != float64(200) || m["md"] != float64(42) || m["fs"] != "fs-value" || m["missing"] != nil ||
			m["mixed"] != "m=200 x=-" || m["up"] != up || m["lit"] != float64(7) {
			t.Errorf("JSON line: %s", line)
		}
		nested, _ := m["nested"].(map[string]any)
		if nested["route"] != "logs_route" || nested["port"] == nil {
			t.Errorf("nested: %v", nested)
		}
		if _, isNum := nested["port"].(float64); !isNum {
			t.Errorf("port must be a number: %v", nested["port"])
		}
		// Keys sorted, as JsonFormatBuilder writes them.
		if !strings.HasPrefix(line, `{"code":200,"fs":"fs-value","id":"`) {
			t.Errorf("keys not in Envoy's order: %s", line)
		}
	})

	t.Run("DefaultFormatOnStdout", func(t *testing.T) {
		id := "alog-default-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		h.must(t, req{listener: "main", path: "/echo/default", headers: hdrs("x-request-id", id, "user-agent", "ua-default")})
		// [%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" %RESPONSE_CODE% ...
		re := regexp.MustCompile(`(?m)^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\] "GET /echo/default HTTP/1\.1" 200 - 0 \d+ \d+ \d+ "-" "ua-default" "` +
			regexp.QuoteMeta(id) + `" "test\.com" "` + regexp.QuoteMeta(up) + `"$`)
		if !tb.Poll(5*time.Second, func() bool { return re.MatchString(h.Output()) }) {
			t.Fatalf("no default-format line matching %s in the host's output:\n%s", re, tail(h.Output(), 3000))
		}
	})

	t.Run("LocalReply", func(t *testing.T) {
		id := "alog-404"
		if r := h.must(t, req{listener: "main", path: "/nowhere", headers: hdrs("x-test-id", id)}); r.status != 404 {
			t.Fatalf("status %d", r.status)
		}
		line := waitLines(t, textLog, 1, 5*time.Second, id+" type=DownstreamEnd ")[0]
		if !strings.Contains(line, " code=404 flags=NR details=route_not_found ") || !strings.Contains(line, " up=- cluster=- ") ||
			!strings.Contains(line, " route=- ") {
			t.Errorf("404 line: %s", line)
		}
	})

	t.Run("ReopenOnSIGUSR1AndAdmin", func(t *testing.T) {
		// Log rotation: the file is moved away, SIGUSR1 makes moe-host open the path again.
		rotated := textLog + ".1"
		if err := os.Rename(textLog, rotated); err != nil {
			t.Fatal(err)
		}
		if err := h.Signal(syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		// The reopen happens on the flush thread; lines logged meanwhile may land in either file.
		if !tb.Poll(5*time.Second, func() bool { _, err := os.Stat(textLog); return err == nil }) {
			t.Fatalf("%s not reopened after SIGUSR1", textLog)
		}
		h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-id", "alog-after-usr1")})
		waitLines(t, textLog, 1, 5*time.Second, "alog-after-usr1 type=DownstreamEnd ")
		if b, _ := os.ReadFile(rotated); strings.Contains(string(b), "alog-after-usr1") {
			t.Errorf("a line logged after the reopen went to the rotated file")
		}

		// POST /reopen_logs does the same.
		if err := os.Rename(textLog, textLog+".2"); err != nil {
			t.Fatal(err)
		}
		if code, body := h.admin(t, "POST", "/reopen_logs"); code != 200 || body != "OK\n" {
			t.Fatalf("POST /reopen_logs: %d %q", code, body)
		}
		if !tb.Poll(5*time.Second, func() bool { _, err := os.Stat(textLog); return err == nil }) {
			t.Fatalf("%s not reopened after /reopen_logs", textLog)
		}
		h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-id", "alog-after-admin")})
		waitLines(t, textLog, 1, 5*time.Second, "alog-after-admin type=DownstreamEnd ")
	})

	t.Run("Stats", func(t *testing.T) {
		st := h.stats(t)
		if st["filesystem.write_buffered"] < 5 || st["filesystem.write_completed"] < 1 || st["filesystem.write_failed"] != 0 {
			t.Errorf("filesystem stats: buffered %d completed %d failed %d", st["filesystem.write_buffered"],
				st["filesystem.write_completed"], st["filesystem.write_failed"])
		}
	})
}

// TestAccessLogFlushedAtShutdown: what is buffered when the host stops is written (the
// default 10 s flush interval would otherwise keep it).
func TestAccessLogFlushedAtShutdown(t *testing.T) {
	findBinaries(t)
	a1 := startUpstream(t, "a1")
	dir := t.TempDir()
	textLog := filepath.Join(dir, "text.log")
	h := startHost(t, hostSpec{tmpl: "accesslog", listeners: []string{"main"},
		data: map[string]any{"A1": a1.Port, "TextLog": textLog, "JSONLog": filepath.Join(dir, "json.log"),
			"FilteredLog": filepath.Join(dir, "filtered.log")}})
	h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-id", "alog-shutdown")})
	h.client.CloseIdleConnections()
	h.Stop(t)
	b, _ := os.ReadFile(textLog)
	if !strings.Contains(string(b), "alog-shutdown type=DownstreamEnd ") {
		t.Errorf("the buffered line was not written at shutdown:\n%s", b)
	}
}

// An access log filter (access_log_impl.cc) decides per logger whether a line is written: here
// DownstreamEnd only, and a status >= 400 or an x-log-me header in [1, 5).
func TestAccessLogFilter(t *testing.T) {
	findBinaries(t)
	a1 := startUpstream(t, "a1")
	dir := t.TempDir()
	filtered := filepath.Join(dir, "filtered.log")
	h := startHost(t, hostSpec{tmpl: "accesslog", listeners: []string{"main"},
		data: map[string]any{"A1": a1.Port, "TextLog": filepath.Join(dir, "text.log"), "JSONLog": filepath.Join(dir, "json.log"),
			"FilteredLog": filtered}})
	h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-id", "f-plain")})
	h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-id", "f-out-of-range", "x-log-me", "5")})
	h.must(t, req{listener: "main", path: "/echo", headers: hdrs("x-test-id", "f-in-range", "x-log-me", "4")})
	h.client.CloseIdleConnections()
	h.Stop(t)
	b, _ := os.ReadFile(filtered)
	if got := string(b); got != "f-in-range DownstreamEnd\n" {
		t.Errorf("filtered log:\n%s", got)
	}
}
