package ldcroute_test

import (
	"testing"

	"github.com/moeproxy/moe/shared/testing/fakeenvoy"
)

const exampleConfig = `{
  "uid": ["$header_x-uid", "$cookie_uid"], "default_unit": "RZ01",
  "cluster_header": "x-moe-cluster", "unit_header": "x-ldc-unit", "response_header": "x-ldc-unit",
  "units": [
    {"name": "RZ01", "cluster": "rz01", "slots": ["0-29"], "fallback": ["RZ02", "RZ03"]},
    {"name": "RZ02", "cluster": "rz02", "slots": ["30-59"], "fallback": ["RZ03", "RZ01"]},
    {"name": "RZ03", "cluster": "rz03", "slots": ["60-99"], "fallback": ["RZ01", "RZ02"]}
  ]}`

func router(h map[string][]string) (string, string) {
	if v := h["x-moe-cluster"]; len(v) > 0 {
		return "app", v[0]
	}
	return "app", ""
}

// In the real framework over a fake Envoy: the cluster header reaches Envoy
// before the route is matched again, the unit is on the response and in
// filter state (for later golang filters and the access log), and
// $ldc_unit can be read by a later plugin.
func TestChainSteersThroughTheRouteTable(t *testing.T) {
	r, err := fakeenvoy.NewChain(`{"plugins":[{"name":"ldc-route","config":` + exampleConfig + `}]}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ uid, cluster, unit string }{{"2088001234", "rz02", "RZ02"}, {"7", "rz01", "RZ01"}, {"", "rz01", "RZ01"}} {
		res := r.Do(fakeenvoy.Request{Headers: [][2]string{{"x-uid", tc.uid}}, Router: router})
		if len(res.Violations) > 0 {
			t.Fatal(res.Violations)
		}
		if res.Upstream == nil || res.Upstream.Cluster != tc.cluster || res.RouteClears != 1 {
			t.Fatalf("uid %q: upstream %+v clears %d", tc.uid, res.Upstream, res.RouteClears)
		}
		if res.Headers["x-ldc-unit"][0] != tc.unit || res.FilterState["moe.state.ldc_unit"] != tc.unit {
			t.Fatalf("uid %q: headers %v state %v", tc.uid, res.Headers, res.FilterState)
		}
	}
}

// BenchmarkChain: a whole request through the moe filter manager on the
// fake Envoy, against the empty chain measured in the same run.
func BenchmarkChain(b *testing.B) {
	uid := [2]string{"x-uid", "2088001234"}
	b.Run("baseline-empty-moe-chain", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[]}`), uid)
	})
	b.Run("ldc-route-example", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"ldc-route","config":`+exampleConfig+`}]}`), uid)
	})
	b.Run("ldc-route-cluster-header-only", func(b *testing.B) {
		fakeenvoy.BenchChain(b, fakeenvoy.MustParseChain(b, `{"plugins":[{"name":"ldc-route","config":{"uid":["$header_x-uid"],"default_unit":"A","unit_header":"","response_header":"",
		  "units":[{"name":"A","cluster":"a","slots":["0-49"]},{"name":"B","cluster":"b","slots":["50-99"]}]}}]}`), uid)
	})
}
