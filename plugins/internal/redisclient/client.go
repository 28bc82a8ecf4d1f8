package redisclient

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client is a go-redis client shared by every config (of any plugin) with an
// equal Config. Use its commands with CallContext's deadline; never Close it:
// call the release function Acquire returned.
type Client struct {
	redis.UniversalClient
	timeout time.Duration

	fp   string
	refs int // guarded by clients
}

// ErrNotChecked: Acquire was given a Config that Check did not pass (its TLS
// settings would be ignored).
var ErrNotChecked = errors.New("redisclient: Acquire needs a config that passed Check")

// errShared is what Close answers: the client belongs to every config sharing it.
var errShared = errors.New("redisclient: a shared client is not closed directly; call its release function")

// clients holds the live clients by config fingerprint. It is global because
// config versions come and go independently (filter level, per route, every
// xDS update) while a reload must not reconnect to Redis: each version takes
// a reference in Init and drops it in Destroy, and the last one closes the
// client.
var clients = struct {
	sync.Mutex
	m map[string]*Client
}{m: map[string]*Client{}}

// Acquire returns the shared client of cfg, creating it if needed (go-redis
// connects lazily: nothing is dialed before the first call), and the function
// that drops this reference. The last release closes the client and its
// connections. release is idempotent and safe from any goroutine.
func Acquire(cfg *Config) (*Client, func(), error) {
	if !cfg.checked {
		return nil, nil, ErrNotChecked
	}
	fp := cfg.fingerprint()
	clients.Lock()
	c := clients.m[fp]
	if c == nil {
		c = &Client{UniversalClient: redis.NewUniversalClient(cfg.options()), timeout: cfg.Timeout.D(), fp: fp}
		clients.m[fp] = c
	}
	c.refs++
	clients.Unlock()
	var once sync.Once
	return c, func() { once.Do(c.release) }, nil
}

func (c *Client) release() {
	clients.Lock()
	c.refs--
	last := c.refs == 0
	if last {
		delete(clients.m, c.fp)
	}
	clients.Unlock()
	if last {
		// Closing only shuts idle sockets: quick, fine on the config thread.
		_ = c.UniversalClient.Close()
	}
}

// Close refuses: the client is shared. Use the release function of Acquire.
func (c *Client) Close() error { return errShared }

// Timeout is the per-call deadline of the client's config.
func (c *Client) Timeout() time.Duration { return c.timeout }

// CallContext is the context for one call: a deadline of Timeout, not
// derived from the request. A request's api.Context is not one of the
// standard library's contexts, so deriving from it would start a goroutine
// per call to watch it; the call is short anyway.
func (c *Client) CallContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), c.timeout)
}

// Live is the number of open shared clients, across plugins (for a gauge and
// for tests).
func Live() int {
	clients.Lock()
	defer clients.Unlock()
	return len(clients.m)
}

// IsTimeout reports whether a call failed by running out of time: the
// deadline, a socket timeout or no free connection in the pool in time.
func IsTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redis.ErrPoolTimeout) {
		return true
	}
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}
