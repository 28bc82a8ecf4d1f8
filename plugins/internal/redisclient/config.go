// Package redisclient is the Redis client plugins share: a typed config
// section (single node, cluster or Sentinel; password/ACL; TLS; timeouts and
// pool), validated with field names, and go-redis v9 clients shared per
// config, reference-counted across config versions and closed by the last
// release.
//
// A plugin embeds a Config as one of its fields, checks it in Validate and
// acquires the client in Init:
//
//	type Config struct {
//		Redis redisclient.Config `json:"redis"`
//		...
//	}
//
//	func newConfig() any { return &Config{Redis: redisclient.DefaultConfig()} }
//
//	func (c *Config) Validate() error { return c.Redis.Check("redis") }
//
//	func (c *Config) Init(env api.ConfigEnv) error {
//		c.client, c.release, err = redisclient.Acquire(&c.Redis)
//		...
//	}
//
//	func (c *Config) Destroy() { c.release() }
//
// and per request bounds each call with the config's timeout:
//
//	ctx, cancel := c.client.CallContext()
//	defer cancel()
//	ok, err := c.client.SetNX(ctx, key, 1, ttl).Result()
//	if err != nil && redisclient.IsTimeout(err) { ... }
package redisclient

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/moeproxy/moe/shared/api"
)

// Config says how to reach Redis. Configs that are equal share one client
// (and its connection pool), also across plugins and config versions.
type Config struct {
	// Addrs: "host:port" of a single node, or seed nodes of a cluster (more
	// than one address means cluster mode, as in go-redis' UniversalClient).
	Addrs []string `json:"addrs"`
	// Cluster forces cluster mode with a single seed address.
	Cluster bool `json:"cluster"`
	// MasterName selects Redis Sentinel: Addrs are then the sentinels.
	MasterName string `json:"master_name"`
	// Username is the ACL user (Redis 6+); empty for the default user.
	Username string `json:"username"`
	// Password is never logged nor sent in any reply.
	Password string `json:"password"`
	// DB is the database number (0 in cluster mode).
	DB int `json:"db"`
	// TLS to Redis; nil: plain TCP.
	TLS *TLS `json:"tls"`
	// Timeout bounds each call (pool wait, dial, write, read and retries
	// together): CallContext's deadline.
	Timeout api.Duration `json:"timeout"`
	// DialTimeout bounds connection setup; a call still never waits longer
	// than Timeout.
	DialTimeout api.Duration `json:"dial_timeout"`
	// PoolSize is connections per node (0: go-redis default, 10 per CPU).
	PoolSize int `json:"pool_size"`
	// MinIdleConns are kept open when idle.
	MinIdleConns int `json:"min_idle_conns"`
	// MaxRetries after a network error within Timeout (0: none).
	MaxRetries int `json:"max_retries"`

	checked bool // Check passed (and built the TLS config)
}

// TLS to Redis.
type TLS struct {
	// ServerName checked in the server certificate (default: the host of the
	// address).
	ServerName string `json:"server_name"`
	// InsecureSkipVerify accepts any server certificate (tests only).
	InsecureSkipVerify bool `json:"insecure_skip_verify"`
	// CAFile: PEM CA certificates to verify the server with (default: the
	// system roots).
	CAFile string `json:"ca_file"`
	// CertFile and KeyFile: a client certificate, for servers that ask for one.
	CertFile string `json:"cert_file"`
	KeyFile  string `json:"key_file"`

	config *tls.Config // built by Check
}

// Limits of the values Check accepts.
const (
	MaxTimeout     = 10 * time.Second
	MaxDialTimeout = time.Minute
	MaxPoolSize    = 10_000
	MaxRetries     = 10
	maxDB          = 1 << 20
)

// DefaultConfig is the usual starting point of a plugin's defaults: a 50ms
// call timeout (a per-request budget), 1s to connect, one retry.
func DefaultConfig() Config {
	return Config{
		Timeout:     api.Duration(50 * time.Millisecond),
		DialTimeout: api.Duration(time.Second),
		MaxRetries:  1,
	}
}

// Check validates the config, naming fields under field (e.g. "redis"), and
// reads the TLS files once. Acquire needs a checked config.
func (c *Config) Check(field string) error {
	c.checked = false
	if len(c.Addrs) == 0 {
		return api.FieldErrorf(api.Field(field, "addrs"), "is required: one \"host:port\" or the seed nodes of a cluster")
	}
	for i, a := range c.Addrs {
		if err := checkAddr(a); err != nil {
			return api.FieldErrorf(api.Field(field, "addrs", i), "must be \"host:port\", got %q: %v", a, err)
		}
	}
	if err := api.CheckRange(api.Field(field, "timeout"), c.Timeout.D(), time.Millisecond, MaxTimeout); err != nil {
		return err
	}
	if err := api.CheckRange(api.Field(field, "dial_timeout"), c.DialTimeout.D(), time.Millisecond, MaxDialTimeout); err != nil {
		return err
	}
	if err := api.CheckRange(api.Field(field, "db"), c.DB, 0, maxDB); err != nil {
		return err
	}
	if c.DB != 0 && c.IsCluster() {
		return api.FieldErrorf(api.Field(field, "db"), "must be 0 in cluster mode (Redis Cluster has only db 0), got %d", c.DB)
	}
	if c.Cluster && c.MasterName != "" {
		return api.FieldErrorf(api.Field(field, "cluster"), "cannot be combined with master_name (Sentinel)")
	}
	if err := api.CheckRange(api.Field(field, "pool_size"), c.PoolSize, 0, MaxPoolSize); err != nil {
		return err
	}
	maxIdle := MaxPoolSize
	if c.PoolSize > 0 {
		maxIdle = c.PoolSize
	}
	if err := api.CheckRange(api.Field(field, "min_idle_conns"), c.MinIdleConns, 0, maxIdle); err != nil {
		return err
	}
	if err := api.CheckRange(api.Field(field, "max_retries"), c.MaxRetries, 0, MaxRetries); err != nil {
		return err
	}
	if c.TLS != nil {
		if err := c.TLS.build(api.Field(field, "tls")); err != nil {
			return err
		}
	}
	c.checked = true
	return nil
}

func checkAddr(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return err
	}
	if host == "" {
		return fmt.Errorf("missing host")
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}

// IsCluster reports whether the config selects Redis Cluster.
func (c *Config) IsCluster() bool {
	return c.Cluster || (len(c.Addrs) > 1 && c.MasterName == "")
}

// build reads the certificate files once, at config time.
func (t *TLS) build(field string) error {
	c := &tls.Config{ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify, MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return api.FieldErrorf(api.Field(field, "ca_file"), "%v", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return api.FieldErrorf(api.Field(field, "ca_file"), "no PEM certificate in %s", t.CAFile)
		}
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return api.FieldErrorf(api.Field(field, "cert_file"), "cert_file and key_file go together")
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return api.FieldErrorf(api.Field(field, "cert_file"), "%v", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	t.config = c
	return nil
}

// options are the go-redis options of a checked config.
func (c *Config) options() *redis.UniversalOptions {
	timeout := c.Timeout.D()
	retries := c.MaxRetries
	if retries == 0 {
		retries = -1 // go-redis reads 0 as "default (3)"
	}
	o := &redis.UniversalOptions{
		Addrs:         c.Addrs,
		IsClusterMode: c.Cluster,
		MasterName:    c.MasterName,
		Username:      c.Username,
		Password:      c.Password,
		DB:            c.DB,
		// RESP2: understood by every Redis and proxy; no HELLO round trip.
		Protocol:    2,
		DialTimeout: c.DialTimeout.D(),
		// One dial attempt per call: go-redis' default (5, 100ms apart) cannot
		// fit in a per-request budget; after pool_size failed dials go-redis
		// fails fast and probes in the background until Redis is back.
		DialerRetries: 1,
		ReadTimeout:   timeout,
		WriteTimeout:  timeout,
		// Each call carries a deadline of Timeout; let it bound socket waits too.
		ContextTimeoutEnabled: true,
		PoolTimeout:           timeout,
		PoolSize:              c.PoolSize,
		MinIdleConns:          c.MinIdleConns,
		MaxRetries:            retries,
		MinRetryBackoff:       time.Millisecond,
		MaxRetryBackoff:       timeout / 4,
		// No CLIENT SETINFO on connect: one round trip less, and older
		// servers and proxies reject it.
		DisableIdentity: true,
	}
	if c.TLS != nil {
		o.TLSConfig = c.TLS.config
	}
	return o
}

// fingerprint identifies a config: equal fingerprints share a client. It
// holds the password, so it only lives in memory and is never logged.
func (c *Config) fingerprint() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// String describes the target for logs, without credentials.
func (c *Config) String() string {
	mode := "single"
	switch {
	case c.MasterName != "":
		mode = "sentinel " + c.MasterName
	case c.IsCluster():
		mode = "cluster"
	}
	return fmt.Sprintf("redis %s %v db %d", mode, c.Addrs, c.DB)
}
