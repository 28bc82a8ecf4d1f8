// Package redistest runs a real redis-server for tests (Debian's
// redis-server package, installed by build/install-deps.sh): on a free
// loopback port, without persistence, in the test's temporary directory,
// stopped when the test ends. Without redis-server tests skip, or fail when
// MOE_REQUIRE_HOST=1 (as make test sets). Programs use it through tb.Run
// (cmd/moebench's gateway chain).
package redistest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/moeproxy/moe/shared/testing/hosttest"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// Server is a redis-server started by a test. Stop and Start restart it on
// the same port (an outage and a recovery).
type Server struct {
	t    tb.TB
	bin  string
	dir  string
	port int
	args []string // extra redis-server arguments
	mu   sync.Mutex
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan struct{}
}

// Start starts redis-server with extra arguments (e.g. "--requirepass", "pw")
// and waits until it answers, or skips the test when it is not installed.
func Start(t tb.TB, args ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("MOE_REQUIRE_HOST") == "1" {
			t.Fatalf("redis-server not found on PATH (build/install-deps.sh installs it): %v", err)
		}
		t.Skip("redis-server not found on PATH")
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir(), port: hosttest.FreePort(t), args: args}
	s.Start()
	t.Cleanup(s.Stop)
	return s
}

// StartCluster starts a one-node Redis Cluster holding every slot and waits
// until the cluster is ok.
func StartCluster(t tb.TB) *Server {
	t.Helper()
	s := Start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	if _, err := s.Do("CLUSTER", "ADDSLOTSRANGE", "0", "16383"); err != nil {
		t.Fatalf("CLUSTER ADDSLOTSRANGE: %v", err)
	}
	var v any
	var err error
	if !tb.Poll(10*time.Second, func() bool {
		v, err = s.Do("CLUSTER", "INFO")
		return err == nil && strings.Contains(fmt.Sprint(v), "cluster_state:ok")
	}) {
		t.Fatalf("cluster not ok: %v %v", v, err)
	}
	return s
}

// Addr is the server's plain TCP address, "127.0.0.1:<port>".
func (s *Server) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }

// Start (re)starts the server and waits until it answers PING. It does
// nothing while the server runs.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return
	}
	s.out = &bytes.Buffer{}
	cmd := exec.Command(s.bin, append([]string{
		"--port", fmt.Sprint(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir,
		"--daemonize", "no", "--loglevel", "warning"}, s.args...)...)
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done

	c := s.admin()
	defer c.Close()
	var err error
	exited := false
	answered := tb.Poll(10*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		err = c.Ping(ctx).Err()
		if err != nil && strings.Contains(err.Error(), "NOAUTH") {
			err = nil // up, with a password
		}
		select {
		case <-done:
			exited = err != nil
		default:
		}
		return err == nil || exited
	})
	switch {
	case exited:
		s.t.Fatalf("redis-server exited at start: %s", s.out.String())
	case !answered:
		s.t.Fatalf("redis-server not answering PING on %s: %v\n%s", s.Addr(), err, s.out.String())
	}
}

// Stop kills the server (an outage: no graceful shutdown) and waits for it.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// admin is a client for the test itself (on the plain port, with the
// password if the server has one).
func (s *Server) admin() *redis.Client {
	pw := ""
	for i, a := range s.args {
		if a == "--requirepass" && i+1 < len(s.args) {
			pw = s.args[i+1]
		}
	}
	return redis.NewClient(&redis.Options{Addr: s.Addr(), Password: pw, Protocol: 2, MaxRetries: -1, DisableIdentity: true})
}

// Do runs an admin command on a fresh connection (5s at most).
func (s *Server) Do(args ...any) (any, error) {
	c := s.admin()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Do(ctx, args...).Result()
}

// ConnectedClients is INFO's connected_clients (including the asking one).
func (s *Server) ConnectedClients() int {
	s.t.Helper()
	v, err := s.Do("INFO", "clients")
	if err != nil {
		s.t.Fatalf("INFO clients: %v", err)
	}
	var n int
	for _, line := range bytes.Split([]byte(fmt.Sprint(v)), []byte("\n")) {
		if _, err := fmt.Sscanf(string(bytes.TrimSpace(line)), "connected_clients:%d", &n); err == nil {
			return n
		}
	}
	s.t.Fatalf("no connected_clients in %v", v)
	return 0
}

// WriteTestPKI writes a CA and a server certificate for localhost/127.0.0.1
// into dir, valid for an hour.
func WriteTestPKI(t tb.TB, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "moe redis test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	srvKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature,
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(srvKey)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", srvDER), write("server.key", "EC PRIVATE KEY", keyDER)
}

// StartTLS starts a server that also listens with TLS (certificates from
// WriteTestPKI, client certificates not required) and returns it, the TLS
// address and the CA file.
func StartTLS(t tb.TB) (s *Server, tlsAddr, caFile string) {
	t.Helper()
	dir := t.TempDir()
	ca, cert, key := WriteTestPKI(t, dir)
	port := hosttest.FreePort(t)
	s = Start(t, "--tls-port", fmt.Sprint(port), "--tls-cert-file", cert, "--tls-key-file", key,
		"--tls-ca-cert-file", ca, "--tls-auth-clients", "no")
	return s, fmt.Sprintf("127.0.0.1:%d", port), ca
}
