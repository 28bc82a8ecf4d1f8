package limitcount

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/moeproxy/moe/shared/api"
)

func (r *RedisConfig) validate(field string) error {
	switch {
	case len(r.Addrs) == 0:
		return api.FieldErrorf(field+".addrs", "is required: one \"host:port\" or the seed nodes of a cluster")
	case r.Timeout.D() <= 0 || r.Timeout.D() > maxTimeout:
		return api.FieldErrorf(field+".timeout", "must be between 1ms and %v, got %v", maxTimeout, r.Timeout.D())
	case r.DialTimeout.D() <= 0 || r.DialTimeout.D() > time.Minute:
		return api.FieldErrorf(field+".dial_timeout", "must be between 1ms and 1m, got %v", r.DialTimeout.D())
	case r.DB < 0 || r.DB > 1<<20:
		return api.FieldErrorf(field+".db", "must be >= 0, got %d", r.DB)
	case r.DB != 0 && r.isCluster():
		return api.FieldErrorf(field+".db", "must be 0 in cluster mode (Redis Cluster has only db 0), got %d", r.DB)
	case r.Cluster && r.MasterName != "":
		return api.FieldErrorf(field+".cluster", "cannot be combined with master_name (Sentinel)")
	case r.PoolSize < 0 || r.PoolSize > 10_000:
		return api.FieldErrorf(field+".pool_size", "must be between 0 (default) and 10000, got %d", r.PoolSize)
	case r.MinIdleConns < 0 || (r.PoolSize > 0 && r.MinIdleConns > r.PoolSize):
		return api.FieldErrorf(field+".min_idle_conns", "must be between 0 and pool_size, got %d", r.MinIdleConns)
	case r.MaxRetries < 0 || r.MaxRetries > 10:
		return api.FieldErrorf(field+".max_retries", "must be between 0 and 10, got %d", r.MaxRetries)
	}
	for i, a := range r.Addrs {
		host, port, err := net.SplitHostPort(a)
		if err == nil && host == "" {
			err = fmt.Errorf("missing host")
		}
		if err == nil {
			if p, perr := strconv.Atoi(port); perr != nil || p < 1 || p > 65535 {
				err = fmt.Errorf("bad port %q", port)
			}
		}
		if err != nil {
			return api.FieldErrorf(fmt.Sprintf("%s.addrs[%d]", field, i), "must be \"host:port\", got %q: %v", a, err)
		}
	}
	if r.TLS != nil {
		if err := r.TLS.build(field + ".tls"); err != nil {
			return err
		}
	}
	return nil
}

func (r *RedisConfig) isCluster() bool {
	return r.Cluster || (len(r.Addrs) > 1 && r.MasterName == "")
}

// build reads the certificate files once, at config time.
func (t *TLS) build(field string) error {
	c := &tls.Config{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return api.FieldErrorf(field+".ca_file", "%v", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return api.FieldErrorf(field+".ca_file", "no PEM certificate in %s", t.CAFile)
		}
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return api.FieldErrorf(field+".cert_file", "cert_file and key_file go together")
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return api.FieldErrorf(field+".cert_file", "%v", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	t.config = c
	return nil
}

func (r *RedisConfig) options() *redis.UniversalOptions {
	timeout := r.Timeout.D()
	retries := r.MaxRetries
	if retries == 0 {
		retries = -1 // go-redis reads 0 as "default (3)"
	}
	o := &redis.UniversalOptions{
		Addrs:         r.Addrs,
		IsClusterMode: r.Cluster,
		MasterName:    r.MasterName,
		Username:      r.Username,
		Password:      r.Password,
		DB:            r.DB,
		// RESP2: understood by every Redis and proxy; no HELLO round trip.
		Protocol:    2,
		DialTimeout: r.DialTimeout.D(),
		// One dial attempt per call: go-redis' default (5, 100ms apart) cannot
		// fit in a per-request budget; after pool_size failed dials go-redis
		// fails fast and probes in the background until Redis is back.
		DialerRetries: 1,
		ReadTimeout:   timeout,
		WriteTimeout:  timeout,
		// Each call carries a deadline of Timeout; let it bound socket waits too.
		ContextTimeoutEnabled: true,
		PoolTimeout:           timeout,
		PoolSize:              r.PoolSize,
		MinIdleConns:          r.MinIdleConns,
		MaxRetries:            retries,
		MinRetryBackoff:       time.Millisecond,
		MaxRetryBackoff:       timeout / 4,
		// No CLIENT SETINFO on connect: one round trip less, and older
		// servers and proxies reject it.
		DisableIdentity: true,
	}
	if r.TLS != nil {
		o.TLSConfig = r.TLS.config
	}
	return o
}

// fingerprint identifies a Redis config: equal fingerprints share a client.
// It holds the password, so it only lives in memory and is never logged.
func (r *RedisConfig) fingerprint() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// String describes the target for logs, without credentials.
func (r *RedisConfig) String() string {
	mode := "single"
	switch {
	case r.MasterName != "":
		mode = "sentinel " + r.MasterName
	case r.isCluster():
		mode = "cluster"
	}
	return fmt.Sprintf("redis %s %v db %d", mode, r.Addrs, r.DB)
}

// sharedClient is one go-redis client (one pool per node) used by every
// config version with the same Redis config.
type sharedClient struct {
	fp     string
	client redis.UniversalClient
	refs   int
}

// clients holds the live Redis clients by config fingerprint. It is global
// because config versions come and go independently (filter level, per
// route, every xDS update) while a reload must not reconnect to Redis: each
// version takes a reference in Init and drops it in Destroy, and the last
// one closes the client.
var clients = struct {
	sync.Mutex
	m map[string]*sharedClient
}{m: map[string]*sharedClient{}}

// acquireClient returns the client of r's config, creating it if needed,
// and the number of live clients.
func acquireClient(r *RedisConfig) (*sharedClient, int) {
	fp := r.fingerprint()
	clients.Lock()
	defer clients.Unlock()
	sc := clients.m[fp]
	if sc == nil {
		// go-redis connects lazily: nothing is dialed until the first call.
		sc = &sharedClient{fp: fp, client: redis.NewUniversalClient(r.options())}
		clients.m[fp] = sc
	}
	sc.refs++
	return sc, len(clients.m)
}

// release drops a reference; the last one closes the client. It returns
// the number of live clients.
func (sc *sharedClient) release() int {
	clients.Lock()
	sc.refs--
	last := sc.refs == 0
	if last {
		delete(clients.m, sc.fp)
	}
	live := len(clients.m)
	clients.Unlock()
	if last {
		// Closing only shuts idle sockets: quick, fine on the config thread.
		_ = sc.client.Close()
	}
	return live
}

// liveClients is the number of open shared clients (for tests).
func liveClients() int {
	clients.Lock()
	defer clients.Unlock()
	return len(clients.m)
}
