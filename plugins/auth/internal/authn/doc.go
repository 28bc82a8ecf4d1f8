// Package authn holds what the authn plugins (basic-auth, key-auth, hmac-auth,
// jwt-auth, ext-auth, ...) share: 401/403 replies with WWW-Authenticate,
// consumer forwarding, hiding credentials from the upstream, constant-time
// compares and header-value hygiene. Keep it small: only what two plugins use.
package authn
