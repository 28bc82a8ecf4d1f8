package filtermanager

import (
	"errors"
	"strconv"
	"time"

	"github.com/moeproxy/moe/cgo/envoyabi"
	"github.com/moeproxy/moe/shared/api"
)

// reqInfo and routeInfo are the stream seen as api.RequestInfo / api.RouteInfo
// (pointer conversions: no allocation).
type reqInfo stream
type routeInfo stream

func atoiStatus(s string) (int, error) { return strconv.Atoi(s) }

// sdk runs an SDK stream-info read that never waits for Envoy's worker
// (GetStringValue/GetIntegerValue read under Envoy's filter mutex). It runs
// under the stream lock, so the phase that makes the call legal cannot end
// while the call is in C. A panic from the SDK (the request ended) becomes a
// *StreamError panic.
func (s *stream) sdk(op string, fn func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkLocked(op); err != nil {
		panic(err)
	}
	defer func() {
		if r := recover(); r != nil {
			if api.IsStreamError(r) {
				panic(r)
			}
			panic(&api.StreamError{Op: op, Err: api.ErrDestroyed})
		}
	}()
	fn()
}

func (i *reqInfo) s() *stream { return (*stream)(i) }

func (i *reqInfo) StartTime() time.Time {
	s := i.s()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startTimeLocked()
}
func (i *reqInfo) Duration() time.Duration { return i.s().elapsed() }

func (i *reqInfo) Protocol() (p string) {
	i.s().sdk("RequestInfo.Protocol", func() { p, _ = i.cb.StreamInfo().Protocol() })
	return p
}

func (i *reqInfo) ResponseCode() (c int) {
	i.s().sdk("RequestInfo.ResponseCode", func() {
		v, ok := i.cb.StreamInfo().ResponseCode()
		if ok {
			c = int(v)
		}
	})
	return c
}

// The downstream addresses are fixed before the first filter runs (Envoy
// settles the remote address, x-forwarded-for included, when the request
// headers arrive), so each is read from Envoy once per request: several
// plugins key on the client IP.
func (i *reqInfo) DownstreamRemoteAddress() string {
	return i.s().cachedAddr(&i.addrs.remote, "RequestInfo.DownstreamRemoteAddress", envoyabi.ValueDownstreamRemoteAddress, func() string {
		return i.cb.StreamInfo().DownstreamRemoteAddress()
	})
}

func (i *reqInfo) DownstreamLocalAddress() string {
	return i.s().cachedAddr(&i.addrs.local, "RequestInfo.DownstreamLocalAddress", envoyabi.ValueDownstreamLocalAddress, func() string {
		return i.cb.StreamInfo().DownstreamLocalAddress()
	})
}

// cachedAddr returns *slot, reading Envoy's value id (sdkRead for a test
// fake) the first time.
func (s *stream) cachedAddr(slot *string, op string, id int, sdkRead func() string) string {
	s.mu.Lock()
	v := *slot
	s.mu.Unlock()
	if v != "" {
		return v
	}
	s.sdk(op, func() {
		if *slot == "" {
			*slot = s.stringValueLocked(id, sdkRead)
		}
		v = *slot
	})
	return v
}

// stringValueLocked reads one of Envoy's string values at the C ABI (one
// allocation, where the SDK's read makes three), or with sdkRead for a test
// fake. Called in s.sdk, which turns a failure into a *StreamError.
func (s *stream) stringValueLocked(id int, sdkRead func() string) string {
	if r := s.abiLocked(); r.Valid() {
		v, _, err := r.StringValue(id)
		if err != nil {
			panic(err)
		}
		return v
	}
	return sdkRead()
}

// abiLocked returns the request at Envoy's C ABI, looked up once per stream
// (the zero Request for a test fake, looked up each time: tests only).
func (s *stream) abiLocked() envoyabi.Request {
	if !s.abi.Valid() {
		r, err := envoyabi.RequestOf(s.cb)
		if err != nil {
			warnLayout(err)
		}
		s.abi = r
	}
	return s.abi
}

func (i *reqInfo) UpstreamHost() (a string) {
	i.s().sdk("RequestInfo.UpstreamHost", func() { a, _ = i.cb.StreamInfo().UpstreamRemoteAddress() })
	return a
}

func (i *reqInfo) UpstreamCluster() (a string) {
	i.s().sdk("RequestInfo.UpstreamCluster", func() { a, _ = i.cb.StreamInfo().UpstreamClusterName() })
	return a
}

// GetProperty may wait for Envoy's worker thread when called from a goroutine
// (Envoy "yields" and answers from the worker). It must not hold the stream
// lock meanwhile, since the worker may need it: ownership is checked first, and
// a request that ends during the call gets ErrDestroyed.
func (i *reqInfo) GetProperty(key string) (v string, err error) {
	s := i.s()
	if err := s.check("RequestInfo.GetProperty"); err != nil {
		return "", err
	}
	defer func() {
		if r := recover(); r != nil {
			v, err = "", &api.StreamError{Op: "RequestInfo.GetProperty", Err: api.ErrDestroyed}
		}
	}()
	return s.cb.GetProperty(key)
}

func (r *routeInfo) s() *stream { return (*stream)(r) }

// RouteName is cached per request until the route cache is cleared.
func (r *routeInfo) RouteName() string {
	s := r.s()
	s.mu.Lock()
	if s.route.haveName {
		n := s.route.name
		s.mu.Unlock()
		return n
	}
	s.mu.Unlock()
	var n string
	s.sdk("Route.RouteName", func() {
		n = s.stringValueLocked(envoyabi.ValueRouteName, s.cb.StreamInfo().GetRouteName)
		s.route.name, s.route.haveName = n, true
	})
	return n
}

// ClusterName is the route's upstream cluster (xds.cluster_name), cached per
// request until the route cache is cleared. It may wait for the worker, see
// GetProperty.
func (r *routeInfo) ClusterName() string {
	s := r.s()
	s.mu.Lock()
	if s.route.haveClust {
		n := s.route.cluster
		s.mu.Unlock()
		return n
	}
	s.mu.Unlock()
	n, err := (*reqInfo)(s).GetProperty("xds.cluster_name")
	if err != nil {
		var se *api.StreamError
		if errors.As(err, &se) {
			panic(err)
		}
		n = ""
	}
	if n != "" { // not known yet (no route, or a host that sets it late): ask again later
		s.mu.Lock()
		s.route.cluster, s.route.haveClust = n, true
		s.mu.Unlock()
	}
	return n
}
