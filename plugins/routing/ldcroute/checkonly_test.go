package ldcroute

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/fakeframework"
)

// Checked only (moectl validate), a config with admin binds nothing: the address stays
// free, also when something else holds it (which only binding could find out).
func TestCheckOnlyBindsNoAdminAddress(t *testing.T) {
	js, base := withAdmin(t, "")
	addr := strings.TrimPrefix(base, "http://")
	var c *Config
	fakeframework.StartsNoGoroutine(t, func() {
		var err error
		if c, _, err = fakeframework.Check[*Config](t, Name, newConfig, js, false); err != nil {
			t.Fatal(err)
		}
	})
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Fatal("the admin API listens after a check")
	}
	serversMu.Lock()
	n := len(servers)
	serversMu.Unlock()
	if c.admin != nil || n != 0 {
		t.Fatalf("admin server %v, %d servers", c.admin, n)
	}
	c.Destroy()

	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	c, _, err = fakeframework.Check[*Config](t, Name, newConfig, `{"admin":{"address":"`+held.Addr().String()+`"},`+threeUnits+`}`, false)
	if err != nil {
		t.Fatalf("checking an address in use: %v", err)
	}
	c.Destroy()
}

// The address is still checked: a loopback ip:port.
func TestCheckOnlyChecksTheAdminAddress(t *testing.T) {
	for _, tc := range []struct{ addr, reason string }{
		{"0.0.0.0:9980", "must be a loopback address"},
		{"localhost:9980", "must be a loopback IP:port"},
		{"127.0.0.1", "must be a loopback IP:port"},
		{"127.0.0.1:0", "needs a port"},
	} {
		fakeframework.WantCheckError(t, Name, `{"admin":{"address":"`+tc.addr+`"},`+threeUnits+`}`, "admin.address", tc.reason)
	}
}
