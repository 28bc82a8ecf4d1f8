package jwtauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moeproxy/moe/shared/api"
)

// jwksSource keeps the JWKS of one config version fresh: a background
// goroutine fetches it (URL) or re-reads it (file) every refresh interval,
// retries failures with exponential backoff, and keeps serving the last good
// set while refreshes fail (stale-while-error). The request path only loads an
// atomic pointer; it never waits for a fetch. A request carrying an unknown kid
// asks for an early refresh, at most once per min_refresh_interval.
type jwksSource struct {
	cur atomic.Pointer[keySet]

	url, file  string
	redacted   string // url without userinfo, for logs
	client     *http.Client
	refresh    time.Duration
	minRefresh time.Duration
	backoffMin time.Duration
	backoffMax time.Duration
	maxSize    int64
	allowed    algSet
	log        api.Logger

	fetchOK, fetchFailed api.Counter

	lastFetch atomic.Int64 // unix nanos of the last fetch start
	lastKick  atomic.Int64 // unix nanos of the last early refresh asked for
	kick      chan struct{}
	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}
	stopOnce  sync.Once
}

func newJWKSSource(c *JWKSConfig, allowed algSet, log api.Logger, m api.Metrics) *jwksSource {
	s := &jwksSource{
		url:         c.URL,
		file:        c.File,
		refresh:     c.RefreshInterval.D(),
		minRefresh:  c.MinRefreshInterval.D(),
		backoffMin:  c.RetryBackoff.D(),
		backoffMax:  c.RetryBackoffMax.D(),
		maxSize:     c.MaxSize,
		allowed:     allowed,
		log:         safeLogger{log},
		fetchOK:     m.Counter("jwks_fetch_ok"),
		fetchFailed: m.Counter("jwks_fetch_failed"),
		kick:        make(chan struct{}, 1),
		done:        make(chan struct{}),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if c.URL != "" {
		if u, err := url.Parse(c.URL); err == nil {
			s.redacted = u.Redacted()
		}
		s.client = &http.Client{
			Timeout: c.FetchTimeout.D(),
			Transport: &http.Transport{
				Proxy:                 nil, // identity providers are reached directly, like Envoy's remote_jwks cluster
				DialContext:           (&net.Dialer{Timeout: c.FetchTimeout.D()}).DialContext,
				TLSHandshakeTimeout:   c.FetchTimeout.D(),
				ResponseHeaderTimeout: c.FetchTimeout.D(),
				MaxIdleConns:          1,
				IdleConnTimeout:       90 * time.Second,
			},
		}
	}
	return s
}

// safeLogger keeps a logger that cannot work here (no Envoy in tools such
// as moectl, or in unit tests) from killing the refresher goroutine.
type safeLogger struct{ l api.Logger }

func (s safeLogger) Debugf(f string, a ...any) { defer func() { _ = recover() }(); s.l.Debugf(f, a...) }
func (s safeLogger) Infof(f string, a ...any)  { defer func() { _ = recover() }(); s.l.Infof(f, a...) }
func (s safeLogger) Warnf(f string, a ...any)  { defer func() { _ = recover() }(); s.l.Warnf(f, a...) }
func (s safeLogger) Errorf(f string, a ...any) { defer func() { _ = recover() }(); s.l.Errorf(f, a...) }

// loadFileNow reads a file JWKS synchronously: a missing or invalid file is a
// config error, unlike an unreachable URL.
func (s *jwksSource) loadFileNow() error {
	return s.fetch()
}

// start launches the refresher. When the initial set is not there yet (URL),
// the first fetch happens at once.
func (s *jwksSource) start() {
	go s.run()
}

func (s *jwksSource) keys() *keySet { return s.cur.Load() }

// requestRefresh asks for an early fetch without blocking, rate limited.
func (s *jwksSource) requestRefresh() {
	now := time.Now().UnixNano()
	last := s.lastKick.Load()
	if time.Duration(now-s.lastFetch.Load()) < s.minRefresh || time.Duration(now-last) < s.minRefresh {
		return
	}
	// One kick per interval even when many requests race here.
	if !s.lastKick.CompareAndSwap(last, now) {
		return
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// close stops the refresher and drops idle connections. It does not wait:
// Destroy runs on Envoy's main thread; cancelling the context ends an
// in-flight fetch promptly.
func (s *jwksSource) close() {
	s.stopOnce.Do(func() {
		s.cancel()
		if s.client != nil {
			s.client.CloseIdleConnections()
		}
	})
}

func (s *jwksSource) run() {
	defer close(s.done)
	// A background goroutine has no request to fail: a panic here (a jwx bug on
	// a hostile JWKS) must not take Envoy down, so log it and stop refreshing;
	// the last good set keeps serving.
	defer func() {
		if r := recover(); r != nil {
			s.log.Errorf("JWKS refresher stopped after a panic: %v", r)
		}
	}()
	backoff := s.backoffMin
	first := s.cur.Load() == nil && s.url != ""
	for {
		var wait time.Duration
		if first {
			first = false
		} else {
			wait = jitter(s.refresh)
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-s.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			case <-s.kick:
				t.Stop()
			}
		}
		for {
			err := s.fetch()
			if err == nil {
				backoff = s.backoffMin
				break
			}
			if s.ctx.Err() != nil {
				return
			}
			stale := "no keys yet: requests get 401 (jwks unavailable)"
			if s.cur.Load() != nil {
				stale = "serving the previous keys"
			}
			s.log.Warnf("JWKS %s: %v; %s; retry in %s", s.source(), err, stale, backoff)
			t := time.NewTimer(backoff)
			select {
			case <-s.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			case <-s.kick:
				t.Stop()
			}
			backoff = min(backoff*2, s.backoffMax)
		}
	}
}

// jitter spreads refreshes of many workers/configs by up to -10%.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d - time.Duration(rand.Int64N(int64(d)/10+1))
}

func (s *jwksSource) source() string {
	if s.file != "" {
		return "file " + s.file
	}
	return "url " + s.redacted
}

// fetch gets and parses the set once and swaps it in on success.
func (s *jwksSource) fetch() error {
	s.lastFetch.Store(time.Now().UnixNano())
	data, err := s.read()
	if err == nil {
		var ks *keySet
		var skipped []string
		ks, skipped, err = parseJWKS(data, s.allowed)
		if err == nil {
			for _, sk := range skipped {
				s.log.Infof("JWKS %s: skipped %s", s.source(), sk)
			}
			s.cur.Store(ks)
			s.fetchOK.Inc(1)
			return nil
		}
	}
	s.fetchFailed.Inc(1)
	return err
}

func (s *jwksSource) read() ([]byte, error) {
	if s.file != "" {
		f, err := os.Open(s.file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return readLimited(f, s.maxSize)
	}
	req, err := http.NewRequestWithContext(s.ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, application/jwk-set+json")
	resp, err := s.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is in the log line already
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("HTTP status %d", resp.StatusCode)
	}
	return readLimited(resp.Body, s.maxSize)
}

func readLimited(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("JWKS larger than max_size (%d bytes)", max)
	}
	return data, nil
}
