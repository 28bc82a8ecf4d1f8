// Package authn holds what the auth plugins (basic-auth, key-auth, hmac-auth,
// jwt-auth, ext-auth, ...) share besides the consumer model (which is
// shared/consumer): the options every credential plugin has, precomputed
// 401/403 replies with WWW-Authenticate, per-reason counters, hiding
// credentials from the upstream and constant-time compares. Keep it small:
// only what two plugins use.
package authn
