package target

import "testing"

func TestMetricName(t *testing.T) {
	for in, want := range map[string]string{
		"orders":        "orders",
		"Orders-Canary": "orders_canary",
		"outbound|80||orders.prod.svc.cluster.local": "outbound_80__orders_prod_svc_cluster_local",
	} {
		if got := MetricName(in); got != want {
			t.Errorf("MetricName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestChecks(t *testing.T) {
	for _, bad := range []string{"", "a b", "a\x00", "\xff", string(make([]byte, 256))} {
		if CheckCluster("c", bad) == nil {
			t.Errorf("cluster %q accepted", bad)
		}
	}
	if err := CheckCluster("c", "outbound|80||a.b:1"); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "a|b", "a b"} {
		if CheckName("n", bad) == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
}
