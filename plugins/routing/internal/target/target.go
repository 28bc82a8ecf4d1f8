// Package target holds what the routing plugins share about route targets:
// cluster names (which must survive as a header value the route table's
// cluster_header reads), metric names derived from them, and how a plugin
// learns that Envoy did not find the cluster it routed to.
package target

import (
	"fmt"
	"strings"

	"github.com/moeproxy/moe/shared/api"
)

// DefaultClusterHeader is the header the routing plugins write a cluster name
// to and the route table's `cluster_header` reads.
const DefaultClusterHeader = "x-moe-cluster"

// CheckCluster validates a cluster name that will be sent as a header value:
// 1..255 visible ASCII characters (Envoy cluster names may hold '|', '.', ':',
// as Istio's "outbound|80||svc.ns.svc.cluster.local" does), no spaces or
// control characters, which a header value could not carry unchanged.
func CheckCluster(field, name string) error {
	if name == "" {
		return api.FieldErrorf(field, "is required")
	}
	if len(name) > 255 {
		return api.FieldErrorf(field, "is longer than 255 characters")
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c >= 0x7f {
			return api.FieldErrorf(field, "%q: a cluster name has visible ASCII characters only (no spaces or control characters)", name)
		}
	}
	return nil
}

// MetricName turns a target name into the part of a metric name after the
// plugin prefix: lower case, every character other than [a-z0-9_] becomes '_'
// ("outbound|80||a.b" -> "outbound_80__a_b").
func MetricName(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '_':
			b.WriteByte(c)
		case 'A' <= c && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// CheckName validates a target name given in a config (used in metrics and
// variables): 1..64 characters of [A-Za-z0-9._-].
func CheckName(field, name string) error {
	if name == "" || len(name) > 64 {
		return api.FieldErrorf(field, "must have 1 to 64 characters")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return api.FieldErrorf(field, "%q: use letters, digits, '.', '_' and '-' only", name)
		}
	}
	return nil
}

// ClusterNotFound reports whether the response a sender filter sees is the
// router's answer to a route whose cluster does not exist: Envoy answers the
// route's cluster_not_found_response_code (503, 404 or 500) with details
// "cluster_not_found" and flag NC (source/common/router/router.cc:566-575).
// It reads response.code_details only for those three statuses, so the
// usual response costs one integer compare.
func ClusterNotFound(ctx api.Context, status int) bool {
	if status != 503 && status != 404 && status != 500 {
		return false
	}
	d, err := ctx.Sender().RequestInfo().GetProperty("response.code_details")
	return err == nil && d == "cluster_not_found"
}

// Describe is a short description of a target for log lines.
func Describe(name, cluster string) string {
	if cluster == "" || cluster == name {
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("%q (cluster %q)", name, cluster)
}
