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
	_ "github.com/moeproxy/moe/plugins/routing/rewrite"
	_ "github.com/moeproxy/moe/plugins/routing/stressroute"
	_ "github.com/moeproxy/moe/plugins/routing/trafficroute"
	_ "github.com/moeproxy/moe/plugins/template"
)
