package compile

import "testing"

func TestMinimalBootstrapCompiles(t *testing.T) {
	res, err := compileString(t, minimal(t, nil))
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	if got := res.Bootstrap.Listeners[0].HCM.RouteConfig.VirtualHosts[0].Routes[0].Route.Cluster; got != "backend" {
		t.Fatalf("cluster = %q", got)
	}
}
