package compile

import (
	"strings"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// retryOnTokens are the retry_on values moe-host's router acts on
// (source/common/router/retry_state_impl.cc parseRetryOn / parseRetryGrpcOn).
var retryOnTokens = map[string]bool{
	"5xx": true, "gateway-error": true, "connect-failure": true, "envoy-ratelimited": true,
	"retriable-4xx": true, "refused-stream": true, "retriable-status-codes": true, "reset": true,
	"reset-before-request": true, "cancelled": true, "deadline-exceeded": true,
	"resource-exhausted": true, "unavailable": true, "internal": true,
}

// retryOnEnvoyOnly are the retry_on values Envoy knows and moe-host cannot act on:
// retriable-headers needs retriable_headers, http3-post-connect-failure HTTP/3.
var retryOnEnvoyOnly = map[string]bool{"retriable-headers": true, "http3-post-connect-failure": true}

// retryPolicy compiles a RetryPolicy (RetryPolicyImpl, source/common/router/retry_policy_impl.cc).
func (c *compiler) retryPolicy(p ypath.Path, rp *routev3.RetryPolicy) *bootstrap.RetryPolicy {
	if rp == nil {
		return nil
	}
	c.only(p, rp, "retry_on", "num_retries", "per_try_timeout", "retriable_status_codes", "retry_back_off")
	out := &bootstrap.RetryPolicy{
		RetryOn:              []string{},
		NumRetries:           u32(rp.GetNumRetries(), 1),
		PerTryTimeoutMS:      c.millis(p.Field("per_try_timeout"), rp.GetPerTryTimeout(), 0),
		RetriableStatusCodes: append([]uint32{}, rp.GetRetriableStatusCodes()...),
	}
	// StringUtil::splitToken(config, ",", false, true): empty tokens dropped, whitespace trimmed.
	// Envoy ignores unknown tokens with a warning; so does moectl.
	for _, tok := range strings.Split(rp.GetRetryOn(), ",") {
		tok = strings.TrimSpace(tok)
		switch {
		case tok == "":
		case retryOnTokens[tok]:
			out.RetryOn = append(out.RetryOn, tok)
		case retryOnEnvoyOnly[tok]:
			c.errs.Addf(p.Field("retry_on"), "retry_on %q is not supported by moe-host", tok)
		default:
			c.warnf(p.Field("retry_on"), "unknown retry_on token %q is ignored (as Envoy ignores it)", tok)
		}
	}
	if bo := rp.GetRetryBackOff(); bo != nil {
		bp := p.Field("retry_back_off")
		c.only(bp, bo, "base_interval", "max_interval")
		// Sub-millisecond intervals are rounded up to 1 ms; max below base is refused.
		base := c.millis(bp.Field("base_interval"), bo.GetBaseInterval(), 1)
		if base < 1 {
			base = 1
		}
		out.BaseIntervalMS = &base
		if bo.GetMaxInterval() != nil {
			max := c.millis(bp.Field("max_interval"), bo.GetMaxInterval(), 1)
			if max < 1 {
				max = 1
			}
			if max < base {
				c.errs.Addf(bp.Field("max_interval"), "retry_policy.max_interval must greater than or equal to the base_interval")
			}
			out.MaxIntervalMS = &max
		}
	}
	return out
}
