package limitcount

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisServer is a real redis-server started by a test on a free port, with
// no persistence, in the test's temporary directory. Stop and Start restart
// it on the same port (an outage and a recovery).
type redisServer struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	args []string // extra redis-server arguments
	mu   sync.Mutex
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan struct{}
}

// startRedis starts redis-server or skips the test when it is not installed
// (fails instead when MOE_REQUIRE_HOST=1, as CI sets).
func startRedis(t testing.TB, args ...string) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("MOE_REQUIRE_HOST") == "1" {
			t.Fatalf("redis-server not found on PATH (build/install-deps.sh installs it): %v", err)
		}
		t.Skip("redis-server not found on PATH")
	}
	r := &redisServer{t: t, bin: bin, dir: t.TempDir(), port: freePort(t), args: args}
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func (r *redisServer) Addr() string { return fmt.Sprintf("127.0.0.1:%d", r.port) }

// Start (re)starts the server and waits until it answers PING.
func (r *redisServer) Start() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		return
	}
	r.out = &bytes.Buffer{}
	cmd := exec.Command(r.bin, append([]string{
		"--port", fmt.Sprint(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.dir,
		"--daemonize", "no", "--loglevel", "warning"}, r.args...)...)
	cmd.Stdout, cmd.Stderr = r.out, r.out
	if err := cmd.Start(); err != nil {
		r.t.Fatalf("start redis-server: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	r.cmd, r.done = cmd, done

	c := r.admin()
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		if err != nil && strings.Contains(err.Error(), "NOAUTH") {
			err = nil // up, with a password
		}
		cancel()
		if err == nil {
			return
		}
		select {
		case <-done:
			r.t.Fatalf("redis-server exited at start: %s", r.out.String())
		default:
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("redis-server not answering PING on %s: %v\n%s", r.Addr(), err, r.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop kills the server (an outage: no graceful shutdown) and waits for it.
func (r *redisServer) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	<-r.done
	r.cmd = nil
}

// admin is a client for the test itself (on the plain port, with the
// password if the server has one).
func (r *redisServer) admin() *redis.Client {
	pw := ""
	for i, a := range r.args {
		if a == "--requirepass" && i+1 < len(r.args) {
			pw = r.args[i+1]
		}
	}
	return redis.NewClient(&redis.Options{Addr: r.Addr(), Password: pw, Protocol: 2, MaxRetries: -1, DisableIdentity: true})
}

// Do runs an admin command on a fresh connection.
func (r *redisServer) Do(args ...any) (any, error) {
	c := r.admin()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Do(ctx, args...).Result()
}

// connectedClients is INFO's connected_clients (including the asking one).
func (r *redisServer) connectedClients() int {
	r.t.Helper()
	v, err := r.Do("INFO", "clients")
	if err != nil {
		r.t.Fatalf("INFO clients: %v", err)
	}
	var n int
	for _, line := range bytes.Split([]byte(fmt.Sprint(v)), []byte("\n")) {
		if _, err := fmt.Sscanf(string(bytes.TrimSpace(line)), "connected_clients:%d", &n); err == nil {
			return n
		}
	}
	r.t.Fatalf("no connected_clients in %v", v)
	return 0
}

func TestRedisHelperRestartsOnTheSamePort(t *testing.T) {
	r := startRedis(t)
	if _, err := r.Do("SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	r.Stop()
	if _, err := r.Do("PING"); err == nil {
		t.Fatal("PING answered after Stop")
	}
	r.Start()
	if v, err := r.Do("EXISTS", "k"); err != nil || v.(int64) != 0 {
		t.Fatalf("after restart: %v %v (want an empty server)", v, err)
	}
}
