package limitcount

import (
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
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

func TestRedisPassword(t *testing.T) {
	r := startRedis(t, "--requirepass", "secret-pw")
	run := runner(t, cfgFor(r, map[string]any{"failure_policy": "fail_closed", "redis": map[string]any{"password": "secret-pw"}}))
	if res := do(t, run); res.Status != 200 || hdr(res, "x-ratelimit-remaining") != "2" {
		t.Fatalf("with the password: %d %v", res.Status, res.Headers)
	}
	wrong := runner(t, cfgFor(r, map[string]any{"failure_policy": "fail_closed", "redis": map[string]any{"password": "wrong-pw"}}))
	res := do(t, wrong)
	if res.Status != 503 {
		t.Fatalf("with a wrong password: %d, want 503 (fail_closed)", res.Status)
	}
	for _, line := range fakeenvoy.Logs("") {
		if strings.Contains(line, "secret-pw") || strings.Contains(line, "wrong-pw") {
			t.Errorf("a log line shows the password: %s", line)
		}
	}
	if strings.Contains(res.Body, "pw") {
		t.Errorf("reply shows the password: %q", res.Body)
	}
}

// TestRedisCluster runs against a one-node Redis Cluster holding every slot:
// the cluster client, slot routing and the hash-tagged keys.
func TestRedisCluster(t *testing.T) {
	r := startRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	if _, err := r.Do("CLUSTER", "ADDSLOTSRANGE", "0", "16383"); err != nil {
		t.Fatalf("CLUSTER ADDSLOTSRANGE: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := r.Do("CLUSTER", "INFO")
		if err == nil && strings.Contains(fmt.Sprint(v), "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster not ok: %v %v", v, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, window := range []string{"fixed", "sliding"} {
		run := runner(t, cfgFor(r, map[string]any{"count": 2, "time_window": "10s", "window": window, "key": "$header_x-user",
			"failure_policy": "fail_closed", "redis": map[string]any{"cluster": true}}))
		codes := []int{do(t, run, "x-user", "a").Status, do(t, run, "x-user", "a").Status, do(t, run, "x-user", "a").Status}
		if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 {
			t.Errorf("%s window in cluster mode: %v, want 200 200 429", window, codes)
		}
	}
}

func TestRedisTLS(t *testing.T) {
	dir := t.TempDir()
	ca, srvCert, srvKey := writeTestPKI(t, dir)
	tlsPort := freePort(t)
	r := startRedis(t, "--tls-port", fmt.Sprint(tlsPort), "--tls-cert-file", srvCert, "--tls-key-file", srvKey,
		"--tls-ca-cert-file", ca, "--tls-auth-clients", "no")
	tlsAddr := fmt.Sprintf("127.0.0.1:%d", tlsPort)
	run := runner(t, cfgFor(r, map[string]any{"failure_policy": "fail_closed",
		"redis": map[string]any{"addrs": []string{tlsAddr}, "tls": map[string]any{"ca_file": ca, "server_name": "localhost"}}}))
	if res := do(t, run); res.Status != 200 || hdr(res, "x-ratelimit-remaining") != "2" {
		t.Fatalf("over TLS: %d %v", res.Status, res.Headers)
	}
	// A server certificate that does not verify: the call fails (fail_closed).
	bad := runner(t, cfgFor(r, map[string]any{"failure_policy": "fail_closed",
		"redis": map[string]any{"addrs": []string{tlsAddr}, "tls": map[string]any{"server_name": "localhost"}}}))
	if res := do(t, bad); res.Status != 503 {
		t.Fatalf("TLS with an unknown CA: %d, want 503", res.Status)
	}
}

// writeTestPKI writes a CA and a server certificate for localhost/127.0.0.1.
func writeTestPKI(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "limit-count test CA"},
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
