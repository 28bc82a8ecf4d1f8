package ldcroute

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/fakeframework"
	"github.com/moeproxy/moe/shared/testing/hosttest"
)

func withAdmin(t *testing.T, extra string) (string, string) {
	addr := fmt.Sprintf("127.0.0.1:%d", hosttest.FreePort(t))
	return `{"admin":{"address":"` + addr + `"` + extra + `},` + threeUnits + `}`, "http://" + addr
}

// adminClient opens a connection per call, so the connection bound is what
// the test sees.
var adminClient = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

func call(t *testing.T, method, url string, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := adminClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func units(t *testing.T, base string) map[string]unitView {
	t.Helper()
	code, body := call(t, "GET", base+"/units")
	if code != 200 {
		t.Fatalf("GET /units: %d %s", code, body)
	}
	var v listView
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	out := map[string]unitView{}
	for _, u := range v.Units {
		out[u.Name] = u
	}
	return out
}

func TestAdminMarksUnitsDownAndUp(t *testing.T) {
	js, base := withAdmin(t, "")
	c, env := parse(t, js)
	if u := units(t, base)["RZ02"]; u.Down || u.Serving != "RZ02" || u.Cluster != "rz02" || u.Slots[0] != "30-59" {
		t.Fatalf("RZ02 at start: %+v", u)
	}
	if code, body := call(t, "POST", base+"/units/RZ02/down"); code != 200 || !strings.Contains(body, `"serving":"RZ03"`) {
		t.Fatalf("down: %d %s", code, body)
	}
	// The next request already sees it.
	if ctx, _, _ := run(t, c, "x-uid", "1234"); unitOf(ctx) != "RZ03" {
		t.Fatalf("after RZ02 down: %s", unitOf(ctx))
	}
	if env.Value("unit_down_RZ02") != 1 || env.Count("admin_changes") != 1 || env.Count("fallback") != 1 {
		t.Fatalf("metrics %v", env.Values())
	}
	call(t, "POST", base+"/units/RZ03/down")
	if ctx, _, _ := run(t, c, "x-uid", "1234"); unitOf(ctx) != "RZ01" {
		t.Fatalf("after RZ02, RZ03 down: %s", unitOf(ctx))
	}
	call(t, "POST", base+"/units/RZ01/down")
	if ctx, _, _ := run(t, c, "x-uid", "1234"); ctx.Replied == nil || ctx.Replied.Code != 503 {
		t.Fatalf("all down: %+v", ctx.Replied)
	}
	if u := units(t, base)["RZ02"]; !u.Down || u.Admin != "down" || u.Serving != "" {
		t.Fatalf("RZ02 all down: %+v", u)
	}
	for _, n := range []string{"RZ01", "RZ02", "RZ03"} {
		if code, _ := call(t, "POST", base+"/units/"+n+"/reset"); code != 200 {
			t.Fatalf("reset %s: %d", n, code)
		}
	}
	if ctx, _, _ := run(t, c, "x-uid", "1234"); unitOf(ctx) != "RZ02" {
		t.Fatalf("after reset: %s", unitOf(ctx))
	}
}

// "up" overrides down: true in config; reset returns to the config.
func TestAdminUpOverridesTheConfig(t *testing.T) {
	js, base := withAdmin(t, "")
	js = strings.Replace(js, `"slots": ["30-59"]`, `"slots": ["30-59"], "down": true`, 1)
	c, _ := parse(t, js)
	if ctx, _, _ := run(t, c, "x-uid", "1234"); unitOf(ctx) != "RZ03" {
		t.Fatalf("config down: %s", unitOf(ctx))
	}
	call(t, "POST", base+"/units/RZ02/up")
	if u := units(t, base)["RZ02"]; u.Down || !u.DownInConfig || u.Admin != "up" {
		t.Fatalf("%+v", u)
	}
	if ctx, _, _ := run(t, c, "x-uid", "1234"); unitOf(ctx) != "RZ02" {
		t.Fatalf("admin up: %s", unitOf(ctx))
	}
	call(t, "POST", base+"/units/RZ02/reset")
	if ctx, _, _ := run(t, c, "x-uid", "1234"); unitOf(ctx) != "RZ03" {
		t.Fatalf("reset: %s", unitOf(ctx))
	}
}

func TestAdminBadCalls(t *testing.T) {
	js, base := withAdmin(t, `,"token":"s3cret-token-0123456789"`)
	parse(t, js)
	for _, tc := range []struct {
		method, path string
		hdr          []string
		code         int
	}{
		{"GET", "/units", nil, 401},
		{"GET", "/units", []string{"authorization", "Bearer wrong-token-0123456789"}, 401},
		{"GET", "/units", []string{"authorization", "Bearer s3cret-token-0123456789"}, 200},
		{"GET", "/units/RZ01", []string{"authorization", "Bearer s3cret-token-0123456789"}, 200},
		{"GET", "/units/RZ09", []string{"authorization", "Bearer s3cret-token-0123456789"}, 404},
		{"POST", "/units/RZ09/down", []string{"authorization", "Bearer s3cret-token-0123456789"}, 404},
		{"GET", "/units/RZ01/down", []string{"authorization", "Bearer s3cret-token-0123456789"}, 405},
		{"POST", "/units/RZ01/explode", []string{"authorization", "Bearer s3cret-token-0123456789"}, 404},
		{"DELETE", "/units", []string{"authorization", "Bearer s3cret-token-0123456789"}, 405},
		{"GET", "/", []string{"authorization", "Bearer s3cret-token-0123456789"}, 404},
	} {
		if code, body := call(t, tc.method, base+tc.path, tc.hdr...); code != tc.code {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, code, body, tc.code)
		}
	}
	// Headers over 8 KiB are refused.
	if code, _ := call(t, "GET", base+"/units", "x-big", strings.Repeat("a", 16<<10)); code != 431 {
		t.Errorf("huge header: %d, want 431", code)
	}
}

// The server lives as long as some config uses its address: a new config
// version on the same address takes over (marks kept); the last Destroy
// stops it.
func TestAdminLifecycle(t *testing.T) {
	js, base := withAdmin(t, "")
	c1, _ := fakeframework.MustParse[*Config](t, Name, newConfig, js)
	call(t, "POST", base+"/units/RZ02/down")
	// Version 2 (one more unit slot split) on the same address, built while
	// version 1 still serves.
	js2 := strings.Replace(js, `"fallback": ["RZ03", "RZ01"]`, `"fallback": ["RZ01", "RZ03"]`, 1)
	c2, _ := fakeframework.MustParse[*Config](t, Name, newConfig, js2)
	if ctx, _, _ := run(t, c2, "x-uid", "1234"); unitOf(ctx) != "RZ01" {
		t.Fatalf("new version keeps the mark and uses its fallback order: %s", unitOf(ctx))
	}
	c1.Destroy()
	if u := units(t, base)["RZ02"]; u.Admin != "down" || u.Serving != "RZ01" || u.Fallback[0] != "RZ01" {
		t.Fatalf("after v1 destroyed: %+v", u)
	}
	c2.Destroy()
	if _, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), time.Second); err == nil {
		t.Fatal("admin API still listening after the last config was destroyed")
	}
	// A fresh config on the address starts clean.
	c3, _ := parse(t, js)
	if ctx, _, _ := run(t, c3, "x-uid", "1234"); unitOf(ctx) != "RZ02" {
		t.Fatalf("fresh config: %s", unitOf(ctx))
	}
}

// The last Destroy frees the address at once, even when the server's goroutine has not
// started serving yet: a config built right after binds it again.
func TestAdminAddressFreeRightAfterDestroy(t *testing.T) {
	js, _ := withAdmin(t, "")
	for i := 0; i < 100; i++ {
		c, _, err := fakeframework.Parse[*Config](t, Name, newConfig, js, false)
		if err != nil {
			t.Fatalf("config %d: %v", i, err)
		}
		c.Destroy()
	}
}

// An address taken by another process is a config error naming the field.
func TestAdminAddressInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	js := `{"admin":{"address":"` + l.Addr().String() + `"},` + threeUnits + `}`
	_, _, err = fakeframework.Parse[*Config](t, Name, newConfig, js, false)
	if err == nil || !strings.Contains(err.Error(), "admin.address") || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("got %v", err)
	}
}

// Concurrent admin calls and requests (run with -race), and the bound on
// connections: more than maxAdminConns idle connections do not starve the
// API of answers once they close.
func TestAdminConcurrent(t *testing.T) {
	js, base := withAdmin(t, "")
	c, _ := parse(t, js)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, _, _ := run(t, c, "x-uid", "1234")
			if u := unitOf(ctx); u != "RZ02" && u != "RZ03" {
				t.Errorf("unit %q", u)
				return
			}
		}
	}()
	for i := 0; i < 50; i++ {
		action := "down"
		if i%2 == 1 {
			action = "up"
		}
		if code, _ := call(t, "POST", base+"/units/RZ02/"+action); code != 200 {
			t.Fatalf("%s: %d", action, code)
		}
	}
	close(stop)
	wg.Wait()
	// Hold maxAdminConns connections idle; one more call waits for a slot
	// and is answered after they close.
	var held []net.Conn
	for i := 0; i < maxAdminConns; i++ {
		cn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, cn)
	}
	done := make(chan int, 1)
	go func() { code, _ := call(t, "GET", base+"/units"); done <- code }()
	select {
	case code := <-done:
		t.Fatalf("answered (%d) while %d connections held every slot", code, maxAdminConns)
	case <-time.After(300 * time.Millisecond):
	}
	for _, cn := range held {
		cn.Close()
	}
	select {
	case code := <-done:
		if code != 200 {
			t.Fatalf("after the slots freed: %d", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no answer after the held connections closed")
	}
}
