package hosttest

import (
	"encoding/json"
	"io"
	"net/http"

	"github.com/moeproxy/moe/shared/testing/echo"
	"github.com/moeproxy/moe/shared/testing/tb"
)

// Echoed is what the echo upstream answers (see shared/testing/echo).
type Echoed = echo.Echoed

// EchoUpstream starts an echo upstream (shared/testing/echo) on 127.0.0.1 for the test and
// returns its port.
func EchoUpstream(t tb.TB) int {
	t.Helper()
	return echo.Start(t, "upstream").Port
}

// DecodeEcho reads an echo upstream response body.
func DecodeEcho(t tb.TB, resp *http.Response) Echoed {
	t.Helper()
	defer resp.Body.Close()
	var e Echoed
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatalf("response is not from the echo upstream (status %d): %q", resp.StatusCode, raw)
	}
	return e
}
