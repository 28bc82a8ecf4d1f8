package iprestriction

import "github.com/moeproxy/moe/shared/api"

// Denial reasons; each has a counter denied_<reason> (moe_ip_restriction_
// prefix added by the framework), named like the auth plugins' counters.
const (
	reasonDenyList   = "deny_list"   // the address is in deny
	reasonNotAllowed = "not_allowed" // allow is set and the address is not in it
	reasonBadAddress = "bad_address" // no usable address (bad or short XFF with xff_fallback: deny)
)

type metricSet struct {
	allowed, denied                  api.Counter
	denyList, notAllowed, badAddress api.Counter
}

func newMetrics(m api.Metrics) metricSet {
	return metricSet{
		allowed:    m.Counter("allowed"),
		denyList:   m.Counter("denied_" + reasonDenyList),
		notAllowed: m.Counter("denied_" + reasonNotAllowed),
		badAddress: m.Counter("denied_" + reasonBadAddress),
	}
}
