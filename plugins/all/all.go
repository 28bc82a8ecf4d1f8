// Package all is the plugin bundle of libgolang.so: every plugin package is
// blank-imported here, e.g.
//
//	_ "github.com/moeproxy/moe/plugins/auth/keyauth"
//
// Importing a plugin package runs its init(), which registers it with
// shared/registry; shared/envoy then exposes it inside the "moe" filter and as
// a golang filter of its own name.
package all

import (
	_ "github.com/moeproxy/moe/plugins/auth/basicauth"
	_ "github.com/moeproxy/moe/plugins/auth/consumerrestriction"
	_ "github.com/moeproxy/moe/plugins/auth/extauth"
	_ "github.com/moeproxy/moe/plugins/auth/hmacauth"
	_ "github.com/moeproxy/moe/plugins/auth/iprestriction"
	_ "github.com/moeproxy/moe/plugins/auth/jwtauth"
	_ "github.com/moeproxy/moe/plugins/auth/keyauth"
	_ "github.com/moeproxy/moe/plugins/limiting/limitcount"
	_ "github.com/moeproxy/moe/plugins/limiting/limitreq"
	_ "github.com/moeproxy/moe/plugins/limiting/sentinel"
	_ "github.com/moeproxy/moe/plugins/routing/canary"
	_ "github.com/moeproxy/moe/plugins/routing/hostbalance"
	_ "github.com/moeproxy/moe/plugins/routing/ldcroute"
	_ "github.com/moeproxy/moe/plugins/routing/mirror"
	_ "github.com/moeproxy/moe/plugins/routing/rewrite"
	_ "github.com/moeproxy/moe/plugins/routing/stressroute"
	_ "github.com/moeproxy/moe/plugins/routing/trafficroute"
	_ "github.com/moeproxy/moe/plugins/stream/accesslog"
	_ "github.com/moeproxy/moe/plugins/stream/auditlog"
	_ "github.com/moeproxy/moe/plugins/stream/cel"
	_ "github.com/moeproxy/moe/plugins/stream/cors"
	_ "github.com/moeproxy/moe/plugins/stream/debug"
	_ "github.com/moeproxy/moe/plugins/stream/directresponse"
	_ "github.com/moeproxy/moe/plugins/stream/fault"
	_ "github.com/moeproxy/moe/plugins/stream/headermutation"
	_ "github.com/moeproxy/moe/plugins/stream/payloadlimit"
	_ "github.com/moeproxy/moe/plugins/stream/trace"
	_ "github.com/moeproxy/moe/plugins/template"
)
