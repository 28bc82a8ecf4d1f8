package canary

import (
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/moeproxy/moe/plugins/routing/internal/steer"
	"github.com/moeproxy/moe/shared/api"
)

// Reasons a target was chosen (metric by_<reason>).
type reason uint8

const (
	byOverride reason = iota
	byCookie
	byKey
	byNoKeyTarget
	byRandom
	numReasons
)

var reasonNames = [numReasons]string{"override", "cookie", "key", "no_key_target", "random"}

func (r reason) String() string { return reasonNames[r] }

// target is a Target compiled for the request path.
type target struct {
	*Target
	seed      uint64  // Hash(name): the target's identity in the rendezvous
	nameState any     // Name boxed once (a string put into an interface per request would allocate)
	invWeight float64 // 1/weight (0 weight: never picked by hash)
	hostSeeds []uint64
	setCookie string // the prebuilt Set-Cookie value pinning to this target
	routed    api.Counter
	// decisions, one per reason, prebuilt so that keeping the decision for
	// the response path allocates nothing.
	decisions [numReasons]decision
}

// decision is what the request path leaves for the response path.
type decision struct {
	t   *target
	why reason
}

type compiled struct {
	targets  []target
	weighted []*target // weight > 0, in config order
	byName   map[string]*target
	noKey    *target
	saltHash uint64

	clusterHeader, targetHeader, responseHeader string
	overrideHeader, overrideCookie              string
	stickyCookie                                string // cookie name, "" = none
	sends                                       bool   // the response path has work besides counting

	reasons                                [numReasons]api.Counter
	invalidKey, overrideUnknown, clusterNF api.Counter
	overrideRefused                        api.Counter
	lastWarn                               atomic.Int64 // unix second of the last cluster_not_found warning
}

// State keys: the chosen target's name (a string: it reaches later golang
// filters and Envoy's access log as filter state moe.state.canary_target) and
// the decision for this plugin's own response path.
const (
	StateTarget   = "canary_target"
	stateDecision = "canary.decision"
)

// Init compiles the targets, the cookies and the metrics.
func (c *Config) Init(env api.ConfigEnv) error {
	m := env.Metrics()
	c.clusterHeader = strings.ToLower(c.ClusterHeader)
	c.targetHeader = strings.ToLower(c.TargetHeader)
	c.responseHeader = strings.ToLower(c.ResponseHeader)
	if o := c.Override; o != nil {
		c.overrideHeader = strings.ToLower(o.Header)
		c.overrideCookie = o.Cookie
	}
	if c.Cookie != nil {
		c.stickyCookie = c.Cookie.Name
	}
	c.sends = c.responseHeader != "" || c.stickyCookie != ""
	c.saltHash = steer.Hash(c.Salt)
	c.targets = make([]target, len(c.Targets))
	c.byName = make(map[string]*target, len(c.Targets))
	for i := range c.Targets {
		t := &c.targets[i]
		t.Target = &c.Targets[i]
		t.seed = steer.Hash(t.Name)
		t.nameState = t.Name
		if t.Weight > 0 {
			t.invWeight = 1 / float64(t.Weight)
			c.weighted = append(c.weighted, t)
		}
		for _, h := range t.Hosts {
			t.hostSeeds = append(t.hostSeeds, steer.Hash(h))
		}
		if c.Cookie != nil {
			t.setCookie = c.Cookie.render(t.Name)
		}
		t.routed = m.Counter("target_" + steer.MetricSuffix(t.Name))
		for r := range t.decisions {
			t.decisions[r] = decision{t: t, why: reason(r)}
		}
		c.byName[t.Name] = t
	}
	if c.NoKeyTarget != "" {
		c.noKey = c.byName[c.NoKeyTarget]
	}
	for r := range c.reasons {
		c.reasons[r] = m.Counter("by_" + reasonNames[r])
	}
	c.invalidKey = m.Counter("invalid_key")
	c.overrideUnknown = m.Counter("override_unknown")
	c.overrideRefused = m.Counter("override_refused")
	c.clusterNF = m.Counter("cluster_not_found")
	return nil
}

// render builds a Set-Cookie value for one target.
func (k *Cookie) render(value string) string {
	var b strings.Builder
	b.WriteString(k.Name)
	b.WriteByte('=')
	b.WriteString(value)
	if s := int64(k.MaxAge.D().Seconds()); s > 0 {
		b.WriteString("; Max-Age=")
		b.WriteString(strconv.FormatInt(s, 10))
	}
	b.WriteString("; Path=")
	if k.Path == "" {
		b.WriteString("/")
	} else {
		b.WriteString(k.Path)
	}
	if k.Domain != "" {
		b.WriteString("; Domain=")
		b.WriteString(k.Domain)
	}
	if k.Secure {
		b.WriteString("; Secure")
	}
	if k.HTTPOnly {
		b.WriteString("; HttpOnly")
	}
	if k.SameSite != "" {
		b.WriteString("; SameSite=")
		b.WriteString(k.SameSite)
	}
	return b.String()
}
