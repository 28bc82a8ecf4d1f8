package limitreq

import (
	"math"
	"strconv"
	"time"

	"golang.org/x/time/rate"
)

// decision is the outcome for one request.
type decision struct {
	wait       time.Duration // > 0: admitted after waiting this long
	reserve    *rate.Reservation
	retryAfter time.Duration // > 0 (or ok=false): rejected
	ok         bool
}

// take asks key's bucket for one token at the current time.
func (rt *state) take(key string) decision {
	l := rt.cache.get(key)
	now := rt.now()
	if rt.maxDelay <= 0 {
		if l.AllowN(now, 1) {
			return decision{ok: true}
		}
		// Time until one whole token is back.
		missing := 1 - l.TokensAt(now)
		return decision{retryAfter: time.Duration(missing / float64(rt.limit) * float64(time.Second))}
	}
	r := l.ReserveN(now, 1)
	if !r.OK() { // burst < 1 cannot happen (Validate); be safe anyway
		return decision{retryAfter: time.Second}
	}
	d := r.DelayFrom(now)
	if d <= 0 {
		return decision{ok: true}
	}
	if d > rt.maxDelay {
		r.CancelAt(now)
		return decision{retryAfter: d - rt.maxDelay}
	}
	return decision{ok: true, wait: d, reserve: r}
}

// retryAfterValues holds "1".."120" so the common Retry-After values need no
// allocation.
var retryAfterValues = func() [121]string {
	var v [121]string
	for i := range v {
		v[i] = strconv.Itoa(i)
	}
	return v
}()

// retryAfterHeader renders a wait as delta-seconds, rounded up, at least 1
// (RFC 9110 10.2.3: an integer; 0 would invite an immediate retry).
func retryAfterHeader(d time.Duration) string {
	s := retryAfterSeconds(d)
	if s < int64(len(retryAfterValues)) {
		return retryAfterValues[s]
	}
	return strconv.FormatInt(s, 10)
}

func retryAfterSeconds(d time.Duration) int64 {
	return max(1, int64(math.Ceil(d.Seconds())))
}
