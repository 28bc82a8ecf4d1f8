package hmacauth

import (
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// The worked example of README.md. The signature was computed with openssl,
// a third implementation next to the plugin and clientSign:
//
//	printf '@request-target: get /orders?id=42\ndate: Mon, 30 Nov 2026 12:00:00 GMT\nx-nonce: 5f2b9c1e-2d4a-4b8e-9d3f-0a1b2c3d4e5f' \
//	  | openssl dgst -sha256 -hmac 'my-shared-secret-of-32-bytes-abc' -binary | base64
const (
	exampleSecret = "my-shared-secret-of-32-bytes-abc"
	exampleDate   = "Mon, 30 Nov 2026 12:00:00 GMT"
	exampleNonce  = "5f2b9c1e-2d4a-4b8e-9d3f-0a1b2c3d4e5f"
	exampleString = "@request-target: get /orders?id=42\ndate: Mon, 30 Nov 2026 12:00:00 GMT\nx-nonce: 5f2b9c1e-2d4a-4b8e-9d3f-0a1b2c3d4e5f"
	exampleAuth   = `Signature keyId="alice-1",algorithm="hmac-sha256",headers="@request-target date x-nonce",signature="Mrp6u/byoL7dS2fBWRUxxZls1/M8v0VHSf2R8tDz+k8="`
)

func TestReadmeWorkedExample(t *testing.T) {
	c, _ := mustParse(t, map[string]any{"consumers": []map[string]any{
		{"name": "alice", "keys": []map[string]any{{"key_id": "alice-1", "secret": exampleSecret}}},
	}})
	c.compiled.now = func() time.Time { return time.Date(2026, 11, 30, 12, 0, 30, 0, time.UTC) }
	c.compiled.replay = newNonceStore(10000)
	req := fakeframework.NewRequest("GET", "/orders?id=42", "date", exampleDate, "x-nonce", exampleNonce, "authorization", exampleAuth)

	b, missing := appendSigningString(nil, req, "@request-target date x-nonce")
	if missing || string(b) != exampleString {
		t.Fatalf("signing string:\n%s\nwant:\n%s", b, exampleString)
	}
	if got := clientSign("alice-1", exampleSecret, "hmac-sha256", "GET", "/orders?id=42",
		[][2]string{{"date", exampleDate}, {"x-nonce", exampleNonce}}, []string{"@request-target", "date", "x-nonce"}); got != exampleAuth {
		t.Fatalf("independent signer disagrees:\n%s\n%s", got, exampleAuth)
	}
	ctx, st := run(c, req)
	if st != api.Continue || ctx.Consumer().Name != "alice" {
		t.Fatalf("worked example refused: %v %+v", st, ctx.Replied)
	}
}
