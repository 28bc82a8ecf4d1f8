package redisclient

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeenvoy" // Envoy's log API, for go-redis' log lines
	"github.com/moeproxy/moe/shared/testing/redistest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// checked returns a checked config for addr with changes applied.
func checked(t *testing.T, addr string, change func(*Config)) *Config {
	t.Helper()
	c := DefaultConfig()
	c.Addrs = []string{addr}
	c.Timeout = api.Duration(time.Second) // generous: -race on a shared machine
	if change != nil {
		change(&c)
	}
	if err := c.Check("redis"); err != nil {
		t.Fatal(err)
	}
	return &c
}

func acquire(t *testing.T, c *Config) *Client {
	t.Helper()
	cl, release, err := Acquire(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return cl
}

func ping(cl *Client) error {
	ctx, cancel := cl.CallContext()
	defer cancel()
	return cl.Ping(ctx).Err()
}

func TestEqualConfigsShareOneClientUntilTheLastRelease(t *testing.T) {
	r := redistest.Start(t)
	base := r.ConnectedClients()
	before := Live()

	a, releaseA, err := Acquire(checked(t, r.Addr(), nil))
	if err != nil {
		t.Fatal(err)
	}
	b, releaseB, _ := Acquire(checked(t, r.Addr(), nil)) // equal, separately decoded
	other, releaseOther, _ := Acquire(checked(t, r.Addr(), func(c *Config) { c.Timeout = api.Duration(900 * time.Millisecond) }))
	if a != b || a == other {
		t.Fatal("equal configs must share a client, different ones must not")
	}
	if n := Live(); n != before+2 {
		t.Fatalf("%d live clients, want 2", n-before)
	}
	for _, cl := range []*Client{a, b, other} {
		if err := ping(cl); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.ConnectedClients(); n != base+2 {
		t.Errorf("%d connections for two clients, want 2", n-base)
	}
	if err := a.Close(); err == nil {
		t.Fatal("Close of a shared client must refuse")
	}
	releaseA()
	releaseA() // idempotent: must not drop b's reference
	if err := ping(b); err != nil {
		t.Fatalf("b after a released: %v", err)
	}
	releaseB()
	releaseOther()
	if n := Live(); n != before {
		t.Fatalf("%d live clients after every release", n-before)
	}
	if err := ping(b); err == nil {
		t.Fatal("a client released by all is still open")
	}
	if !tb.Poll(2*time.Second, func() bool { return r.ConnectedClients() == base }) {
		t.Errorf("%d connections left open after the last release", r.ConnectedClients()-base)
	}
	// A new Acquire after the last release gets a new, working client.
	if err := ping(acquire(t, checked(t, r.Addr(), nil))); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentAcquireAndRelease(t *testing.T) {
	r := redistest.Start(t)
	before := Live()
	cfg := checked(t, r.Addr(), nil)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				cl, release, err := Acquire(cfg)
				if err != nil {
					t.Error(err)
					return
				}
				if cl.Timeout() != time.Second {
					t.Error("timeout")
				}
				release()
			}
		}()
	}
	wg.Wait()
	if n := Live(); n != before {
		t.Fatalf("%d clients left", n-before)
	}
}

// TestCallContextBoundsACallOnAPausedServer: CLIENT PAUSE (Redis >= 6.2 for
// ALL) makes calls hang; each must end after about the timeout, as a timeout.
func TestCallContextBoundsACallOnAPausedServer(t *testing.T) {
	r := redistest.Start(t)
	cl := acquire(t, checked(t, r.Addr(), func(c *Config) { c.Timeout = api.Duration(80 * time.Millisecond) }))
	if err := ping(cl); err != nil { // connect first: the pause then hits a command
		t.Fatal(err)
	}
	if _, err := r.Do("CLIENT", "PAUSE", "1500", "ALL"); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	start := time.Now()
	err := ping(cl)
	took := time.Since(start)
	if err == nil || !IsTimeout(err) {
		t.Fatalf("paused server: %v, want a timeout", err)
	}
	if took < 70*time.Millisecond || took > 400*time.Millisecond {
		t.Errorf("call took %v, want about the 80ms timeout", took)
	}
}

func TestServerDownFailsFastAndRecovers(t *testing.T) {
	logMark := fakeenvoy.MarkLogs()
	r := redistest.Start(t)
	cl := acquire(t, checked(t, r.Addr(), nil))
	if err := ping(cl); err != nil {
		t.Fatal(err)
	}
	r.Stop()
	for i := 0; i < 5; i++ {
		start := time.Now()
		err := ping(cl)
		if err == nil {
			t.Fatal("ping answered with the server down")
		}
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Errorf("call %d with the server down took %v", i, d)
		}
	}
	if len(fakeenvoy.LogsSince(logMark, "go-redis: ")) == 0 {
		t.Error("go-redis' dial errors did not reach Envoy's log")
	}
	r.Start()
	if !tb.Poll(10*time.Second, func() bool { return ping(cl) == nil }) {
		t.Fatal("not recovered 10s after the server came back")
	}
}

func TestPasswordAndACLUser(t *testing.T) {
	r := redistest.Start(t, "--requirepass", "secret-pw")
	if _, err := r.Do("ACL", "SETUSER", "app", "on", ">app-pw", "~*", "+@all"); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
	if err := ping(acquire(t, checked(t, r.Addr(), func(c *Config) { c.Password = "secret-pw" }))); err != nil {
		t.Fatalf("default user with the password: %v", err)
	}
	if err := ping(acquire(t, checked(t, r.Addr(), func(c *Config) { c.Username, c.Password = "app", "app-pw" }))); err != nil {
		t.Fatalf("ACL user: %v", err)
	}
	err := ping(acquire(t, checked(t, r.Addr(), func(c *Config) { c.Password = "wrong-pw" })))
	if err == nil {
		t.Fatal("a wrong password was accepted")
	}
	if strings.Contains(err.Error(), "pw") {
		t.Errorf("error shows the password: %v", err)
	}
}

func TestTLS(t *testing.T) {
	_, tlsAddr, ca := redistest.StartTLS(t)
	good := acquire(t, checked(t, tlsAddr, func(c *Config) { c.TLS = &TLS{CAFile: ca, ServerName: "localhost"} }))
	if err := ping(good); err != nil {
		t.Fatalf("TLS with the test CA: %v", err)
	}
	bad := acquire(t, checked(t, tlsAddr, func(c *Config) { c.TLS = &TLS{ServerName: "localhost"} }))
	if err := ping(bad); err == nil {
		t.Fatal("TLS with an unknown CA was accepted")
	}
}

func TestCluster(t *testing.T) {
	r := redistest.StartCluster(t)
	cl := acquire(t, checked(t, r.Addr(), func(c *Config) { c.Cluster = true }))
	ctx, cancel := cl.CallContext()
	defer cancel()
	for _, k := range []string{"{a}:1", "{b}:2", "c"} {
		if err := cl.Set(ctx, k, "v", time.Minute).Err(); err != nil {
			t.Fatalf("SET %s in cluster mode: %v", k, err)
		}
	}
}

func TestIsTimeout(t *testing.T) {
	if IsTimeout(errors.New("ERR wrong number of arguments")) || IsTimeout(nil) {
		t.Error("a plain error is not a timeout")
	}
}
