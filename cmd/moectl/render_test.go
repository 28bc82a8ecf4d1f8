package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	networking "istio.io/api/networking/v1alpha3"
	"sigs.k8s.io/yaml"
)

func envoyFilterSpec(t *testing.T, y []byte) *networking.EnvoyFilter {
	t.Helper()
	js, err := yaml.YAMLToJSONStrict(y)
	if err != nil {
		t.Fatal(err)
	}
	var obj struct {
		Metadata map[string]string `json:"metadata"`
		Spec     json.RawMessage   `json:"spec"`
	}
	if err := json.Unmarshal(js, &obj); err != nil {
		t.Fatal(err)
	}
	ef := &networking.EnvoyFilter{}
	if err := protojson.Unmarshal(obj.Spec, ef); err != nil {
		t.Fatal(err)
	}
	return ef
}

// The policy behind istio/envoyfilter-gateway.yaml renders to the same EnvoyFilter.
func TestRenderGatewayPolicy(t *testing.T) {
	code, out, errs := runCLI("render", "../../istio/policy-gateway.yaml")
	if code != 0 || errs != "" {
		t.Fatalf("code %d, stderr:\n%s", code, errs)
	}
	want, err := os.ReadFile("../../istio/envoyfilter-gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got, w := envoyFilterSpec(t, []byte(out)), envoyFilterSpec(t, want); !proto.Equal(got, w) {
		t.Errorf("rendered spec differs from istio/envoyfilter-gateway.yaml:\n%s", out)
	}
	if !strings.Contains(out, "name: moe-gateway\n  namespace: istio-system\n") {
		t.Errorf("metadata:\n%s", out)
	}
}

func TestRenderSidecarPolicy(t *testing.T) {
	policy := writeFile(t, "p.yaml", `target: sidecar
namespace: demo
selector: {app: httpbin}
port: 8080
plugins: [{name: ip-restriction, config: {allow: [10.0.0.0/8]}}]
routes:
- {route: default, port: 8080, plugins: [{name: ip-restriction, disabled: true}]}
`)
	out := writeFile(t, "ef.yaml", "")
	if code, _, errs := runCLI("render", "-o", out, policy); code != 0 || errs != "" {
		t.Fatalf("code %d, stderr:\n%s", code, errs)
	}
	y, _ := os.ReadFile(out)
	ef := envoyFilterSpec(t, y)
	cps := ef.GetConfigPatches()
	if len(cps) != 2 || cps[0].GetMatch().GetContext() != networking.EnvoyFilter_SIDECAR_INBOUND ||
		cps[0].GetMatch().GetListener().GetPortNumber() != 8080 || cps[1].GetMatch().GetRouteConfiguration().GetPortNumber() != 8080 ||
		ef.GetWorkloadSelector().GetLabels()["app"] != "httpbin" {
		t.Fatalf("rendered:\n%s", y)
	}
	// moectl validate accepts what render wrote.
	if code, _, errs := runCLI("validate", out); code != 0 || errs != "" {
		t.Fatalf("validate: code %d:\n%s", code, errs)
	}
}

func TestRenderRefusesBrokenPolicies(t *testing.T) {
	cases := map[string]string{
		"target: gatway\nplugins: [{name: key-auth}]\n":                       `target "gatway": want gateway or sidecar`,
		"target: gateway\nplugins: [{name: key-auth}]\nroute: []\n":           "field route not found",
		"target: sidecar\nselector: {app: x}\nplugins: [{name: limit-req}]\n": "namespace is required for a sidecar policy",
		"target: gateway\nplugins: []\n":                                      "plugins: want a list of {name, config} entries",
		"target: gateway\nplugins: [{name: limit-req, config: {rate: 0}}]\n":  `invalid config of plugin "limit-req": field rate`,
		"target: gateway\nplugins: [{name: jwt-auth, config: {}}]\n":          "field keys: no key source",
		"target: gateway\nplugins: [{name: key-auth, config: {consumers: [{name: a, keys: [k0000001]}]}}]\nroutes: [{plugins: [{name: key-auth, disabled: true}]}]\n": "routes[0]: name a route, a vhost or both",
	}
	for src, want := range cases {
		code, out, errs := runCLI("render", writeFile(t, "p.yaml", src))
		if code != 1 || out != "" || !strings.Contains(errs, want) {
			t.Errorf("%q: code %d, stdout %q, stderr:\n%s\nwant %q", src, code, out, errs, want)
		}
	}
}
