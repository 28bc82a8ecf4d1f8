package authn

import (
	"github.com/moeproxy/moe/shared/api"
)

// Reply is a precomputed authentication failure: status, headers and a short
// body that never echoes the credential. Build one per failure reason at config
// time so the request path only sends it.
type Reply struct {
	Status  int
	Headers api.Headers // shared, never modified after construction
	Body    string
}

// NewReply builds a Reply. challenge is the WWW-Authenticate value (empty for
// schemes without one, e.g. a 403). The body is the reason plus a newline.
func NewReply(status int, challenge, reason string) *Reply {
	r := &Reply{Status: status, Body: reason + "\n"}
	h := api.Headers{"content-type": {"text/plain; charset=utf-8"}}
	if challenge != "" {
		h["www-authenticate"] = []string{challenge}
	}
	r.Headers = h
	return r
}

// Send answers the request with the reply and returns api.Stop:
//
//	return c.missing.Send(ctx)
func (r *Reply) Send(ctx api.Context) api.Status {
	return ctx.Reply(r.Status, r.Body, r.Headers)
}

// QuoteParam quotes s as an auth-param value (RFC 9110 quoted-string),
// dropping characters a quoted-string cannot hold (controls, DEL).
func QuoteParam(s string) string {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 && c != '\t', c == 0x7f:
			// dropped
		default:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}
