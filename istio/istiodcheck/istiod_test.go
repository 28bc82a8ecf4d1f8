// Package istiodcheck checks moe's Istio files against Istio itself, not a model of it:
// istiod's in-process discovery server (the fake server of Istio's own tests) is fed the
// demo's Gateway and VirtualService, a stand-in for its Service, and moe's EnvoyFilters, and
// the listeners and routes istiod generates for the ingress gateway and the httpbin sidecar
// are checked and handed to `moectl validate` (Envoy's protos, every moe plugin config). The
// Helm values and the IstioOperator are rendered with the charts and the manifest generator
// of istio.io/istio, and the deployment patches applied with Kubernetes' strategic merge.
//
// It is a module of its own: istio.io/istio's dependencies must not move the main module's.
// istio.io/istio has no semver tags the Go proxy serves; the pseudo-version in go.mod is the
// newest it has (VERSION 1.31 at commit eed52ebb66ad, August 2026).
package istiodcheck

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"

	"istio.io/istio/operator/pkg/helm"
	"istio.io/istio/operator/pkg/manifest"
	"istio.io/istio/operator/pkg/render"
	"istio.io/istio/operator/pkg/util/clog"
	"istio.io/istio/operator/pkg/values"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pilot/test/xds"
	"istio.io/istio/pkg/config/labels"
)

const golangFilter = "envoy.filters.http.golang"

// standIn replaces what the demo's Kubernetes Service and pod give istiod in a cluster: a
// mesh-internal service httpbin.demo:8000 -> 8080 with one workload at 10.10.0.5.
const standIn = `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: httpbin, namespace: demo}
spec:
  hosts: [httpbin.demo.svc.cluster.local]
  ports: [{number: 8000, name: http, protocol: HTTP, targetPort: 8080}]
  location: MESH_INTERNAL
  resolution: STATIC
  workloadSelector: {labels: {app: httpbin}}
---
apiVersion: networking.istio.io/v1
kind: WorkloadEntry
metadata: {name: httpbin-1, namespace: demo}
spec:
  address: 10.10.0.5
  labels: {app: httpbin}
`

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// docs splits a YAML file into its documents.
func docs(b []byte) []string {
	var out []string
	for _, d := range strings.Split("\n"+string(b), "\n---") {
		if strings.TrimSpace(d) != "" {
			out = append(out, d)
		}
	}
	return out
}

// istioDocs are the Istio resources of a file.
func istioDocs(t *testing.T, name string) []string {
	var out []string
	for _, d := range docs(read(t, name)) {
		var h struct {
			APIVersion string `json:"apiVersion"`
		}
		if err := yaml.Unmarshal([]byte(d), &h); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Contains(h.APIVersion, "istio.io/") {
			out = append(out, d)
		}
	}
	return out
}

type generated struct {
	listeners []*listener.Listener
	routes    []*route.RouteConfiguration
}

func generate(t *testing.T, s *xds.FakeDiscoveryServer, p *model.Proxy) generated {
	p = s.SetupProxy(p)
	return generated{listeners: s.Listeners(p), routes: s.Routes(p)}
}

func gatewayProxy() *model.Proxy {
	l := labels.Instance{"istio": "ingressgateway"}
	return &model.Proxy{Type: model.Router, ConfigNamespace: "istio-system", Labels: l,
		Metadata: &model.NodeMetadata{Labels: l, Namespace: "istio-system"}, IPAddresses: []string{"10.1.1.1"}}
}

func sidecarProxy() *model.Proxy {
	l := labels.Instance{"app": "httpbin"}
	return &model.Proxy{Type: model.SidecarProxy, ConfigNamespace: "demo", Labels: l,
		Metadata: &model.NodeMetadata{Labels: l, Namespace: "demo"}, IPAddresses: []string{"10.10.0.5"}}
}

// server is istiod with the demo, the stand-in and the given EnvoyFilter files.
func server(t *testing.T, envoyFilters ...string) *xds.FakeDiscoveryServer {
	cfg := append(istioDocs(t, "demo.yaml"), docs([]byte(standIn))...)
	for _, f := range envoyFilters {
		cfg = append(cfg, istioDocs(t, f)...)
	}
	return xds.NewFakeDiscoveryServer(t, xds.FakeOptions{ConfigString: strings.Join(cfg, "\n---\n")})
}

// httpFilters lists the HTTP filter names of every HTTP connection manager of the listener
// (of the filter chains whose destination port is port, when port is not 0).
func httpFilters(t *testing.T, l *listener.Listener, port uint32) [][]string {
	var out [][]string
	for _, fc := range l.GetFilterChains() {
		if port != 0 && fc.GetFilterChainMatch().GetDestinationPort().GetValue() != port {
			continue
		}
		for _, f := range fc.GetFilters() {
			h := &hcm.HttpConnectionManager{}
			if f.GetTypedConfig().MessageIs(h) {
				if err := f.GetTypedConfig().UnmarshalTo(h); err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, hf := range h.GetHttpFilters() {
					names = append(names, hf.GetName())
				}
				out = append(out, names)
			}
		}
	}
	return out
}

func listenerNamed(g generated, name string) *listener.Listener {
	for _, l := range g.listeners {
		if l.GetName() == name {
			return l
		}
	}
	return nil
}

func routeNamed(rcs []*route.RouteConfiguration, rc, vh, name string) *route.Route {
	for _, c := range rcs {
		if c.GetName() != rc {
			continue
		}
		for _, v := range c.GetVirtualHosts() {
			if vh != "" && v.GetName() != vh {
				continue
			}
			for _, r := range v.GetRoutes() {
				if r.GetName() == name {
					return r
				}
			}
		}
	}
	return nil
}

// golangBeforeRouter: the last two HTTP filters are the golang filter and the router.
func golangBeforeRouter(names []string) bool {
	n := len(names)
	return n >= 2 && names[n-2] == golangFilter && names[n-1] == "envoy.filters.http.router"
}

func contains(names []string, s string) bool {
	for _, n := range names {
		if n == s {
			return true
		}
	}
	return false
}

func TestIstiodAppliesTheGatewayEnvoyFilter(t *testing.T) {
	s := server(t, "envoyfilter-gateway.yaml", "envoyfilter-sidecar.yaml")
	g := generate(t, s, gatewayProxy())
	l := listenerNamed(g, "0.0.0.0_80")
	if l == nil {
		t.Fatalf("no listener 0.0.0.0_80 for the gateway")
	}
	chains := httpFilters(t, l, 0)
	if len(chains) == 0 {
		t.Fatal("no HTTP connection manager on the gateway's port 80")
	}
	for _, names := range chains {
		if !golangBeforeRouter(names) {
			t.Errorf("gateway HTTP filters %v: want the golang filter right before the router", names)
		}
	}
	healthz := routeNamed(g.routes, "http.80", "*:80", "healthz")
	if healthz.GetTypedPerFilterConfig()[golangFilter] == nil {
		t.Errorf("route healthz of *:80 has no golang per-route config: %v", healthz)
	}
	if def := routeNamed(g.routes, "http.80", "*:80", "default"); def == nil || def.GetTypedPerFilterConfig()[golangFilter] != nil {
		t.Errorf("route default: %v", def)
	}
	moectlValidate(t, "gateway", g, 2)
}

func TestIstiodAppliesTheSidecarEnvoyFilter(t *testing.T) {
	s := server(t, "envoyfilter-gateway.yaml", "envoyfilter-sidecar.yaml")
	g := generate(t, s, sidecarProxy())
	in := listenerNamed(g, "virtualInbound")
	if in == nil {
		t.Fatal("no virtualInbound listener for the sidecar")
	}
	chains := httpFilters(t, in, 8080)
	if len(chains) == 0 {
		t.Fatal("no inbound HTTP filter chain for port 8080")
	}
	for _, names := range chains {
		if !golangBeforeRouter(names) {
			t.Errorf("inbound HTTP filters %v: want the golang filter right before the router", names)
		}
	}
	// The inbound route table is inline: find route "default" of port 8080's table.
	var inline []*route.RouteConfiguration
	for _, fc := range in.GetFilterChains() {
		if fc.GetFilterChainMatch().GetDestinationPort().GetValue() != 8080 {
			continue
		}
		for _, f := range fc.GetFilters() {
			h := &hcm.HttpConnectionManager{}
			if f.GetTypedConfig().MessageIs(h) && f.GetTypedConfig().UnmarshalTo(h) == nil && h.GetRouteConfig() != nil {
				inline = append(inline, h.GetRouteConfig())
			}
		}
	}
	if r := routeNamed(inline, "inbound|8080||", "", "default"); r.GetTypedPerFilterConfig()[golangFilter] == nil {
		t.Errorf("inbound route default of inbound|8080|| has no golang per-route config: %v", r)
	}
	// Outbound listeners of the sidecar are not touched.
	for _, l := range g.listeners {
		if l.GetName() == "virtualInbound" {
			continue
		}
		for _, names := range httpFilters(t, l, 0) {
			if contains(names, golangFilter) {
				t.Errorf("listener %s got the golang filter: %v", l.GetName(), names)
			}
		}
	}
	moectlValidate(t, "sidecar", g, 0)
}

// Without the EnvoyFilters nothing carries the golang filter (the check above is not vacuous).
func TestWithoutEnvoyFiltersNoGolangFilter(t *testing.T) {
	s := server(t)
	for _, p := range []*model.Proxy{gatewayProxy(), sidecarProxy()} {
		for _, l := range generate(t, s, p).listeners {
			for _, names := range httpFilters(t, l, 0) {
				if contains(names, golangFilter) {
					t.Errorf("%s: golang filter without EnvoyFilter", l.GetName())
				}
			}
		}
	}
}

// moectl returns the moectl binary: $MOECTL, else ../../out/moectl.
func moectl(t *testing.T) string {
	if p := os.Getenv("MOECTL"); p != "" {
		return p
	}
	p, _ := filepath.Abs("../../out/moectl")
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("MOE_REQUIRE_HOST") != "" {
			t.Fatalf("no moectl at %s (make out/moectl)", p)
		}
		t.Skipf("no moectl at %s (make out/moectl)", p)
	}
	return p
}

// moectlValidate hands istiod's listeners and routes to `moectl validate` as an xDS resource
// file: Envoy's protos and rules, moe's plugin configs with their Init. Istio-proxy-only
// extension types are warnings there, errors are failures.
func moectlValidate(t *testing.T, name string, g generated, minPluginConfigs int) {
	t.Helper()
	var res []json.RawMessage
	var msgs []proto.Message
	for _, l := range g.listeners {
		msgs = append(msgs, l)
	}
	for _, r := range g.routes {
		msgs = append(msgs, r)
	}
	for _, m := range msgs {
		a, err := anypb.New(m)
		if err != nil {
			t.Fatal(err)
		}
		b, err := protojson.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		res = append(res, b)
	}
	js, _ := json.Marshal(map[string]any{"resources": res})
	f := filepath.Join(t.TempDir(), name+"-xds.json")
	if err := os.WriteFile(f, js, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(moectl(t), "validate", "-o", "json", f)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var rep struct {
		Files []struct {
			PluginConfigs int `json:"plugin_configs"`
			Findings      []struct {
				Line     int    `json:"line"`
				Path     string `json:"path"`
				Severity string `json:"severity"`
				Message  string `json:"message"`
			} `json:"findings"`
		} `json:"files"`
	}
	if jerr := json.Unmarshal(stdout.Bytes(), &rep); jerr != nil || len(rep.Files) != 1 {
		t.Fatalf("moectl validate: %v %v\n%s", err, jerr, stderr.String())
	}
	warnings := 0
	for _, fd := range rep.Files[0].Findings {
		if fd.Severity == "error" {
			t.Errorf("moectl validate of istiod's %s config: %s: %s", name, fd.Path, fd.Message)
		} else {
			warnings++
		}
	}
	if err != nil && !t.Failed() {
		t.Errorf("moectl validate: %v\n%s", err, stderr.String())
	}
	if n := rep.Files[0].PluginConfigs; n < minPluginConfigs {
		t.Errorf("moectl validate checked %d moe plugin configs in istiod's %s config, want >= %d", n, name, minPluginConfigs)
	}
	t.Logf("%s: %d resources, %d moe plugin configs, %d warnings (Istio proxy extensions)",
		name, len(msgs), rep.Files[0].PluginConfigs, warnings)
}

// deployment finds the Deployment named name in rendered manifests, decoded strictly.
func deployment(t *testing.T, ms []manifest.Manifest, name string) *appsv1.Deployment {
	t.Helper()
	for _, m := range ms {
		if m.GetKind() == "Deployment" && m.GetName() == name {
			d := &appsv1.Deployment{}
			js, err := m.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if err := strictJSON(js, d); err != nil {
				t.Fatalf("Deployment %s: %v", name, err)
			}
			return d
		}
	}
	t.Fatalf("no Deployment %s rendered", name)
	return nil
}

func strictJSON(js []byte, into any) error {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

func strictYAML(t *testing.T, y []byte, into any) {
	t.Helper()
	js, err := yaml.YAMLToJSONStrict(y)
	if err != nil {
		t.Fatal(err)
	}
	if err := strictJSON(js, into); err != nil {
		t.Fatalf("%T: %v", into, err)
	}
}

func container(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// mountsLibrary: the pod has volume moe-lib, istio-proxy mounts it read-only at /etc/moe, and
// (for an emptyDir) an init container copies the library into it.
func mountsLibrary(t *testing.T, what string, spec corev1.PodSpec, proxyMounts []corev1.VolumeMount) {
	t.Helper()
	var vol *corev1.Volume
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == "moe-lib" {
			vol = &spec.Volumes[i]
		}
	}
	if vol == nil {
		t.Errorf("%s: no volume moe-lib in %v", what, spec.Volumes)
		return
	}
	ok := false
	for _, m := range proxyMounts {
		ok = ok || (m.Name == "moe-lib" && m.MountPath == "/etc/moe" && m.ReadOnly)
	}
	if !ok {
		t.Errorf("%s: istio-proxy mounts %v", what, proxyMounts)
	}
	if vol.HostPath != nil {
		return
	}
	init := container(spec.InitContainers, "moe-libgolang")
	if vol.EmptyDir == nil || init == nil || strings.Join(init.Command, " ") != "cp /moe/libgolang.so /etc/moe/libgolang.so" ||
		len(init.VolumeMounts) != 1 || init.VolumeMounts[0].MountPath != "/etc/moe" {
		t.Errorf("%s: volume %v, init container %v", what, vol, init)
	}
}

func renderGatewayChart(t *testing.T, vals []byte) []manifest.Manifest {
	t.Helper()
	v := map[string]any{}
	if len(vals) > 0 {
		if err := yaml.UnmarshalStrict(vals, &v); err != nil {
			t.Fatal(err)
		}
	}
	ms, warnings, err := helm.Render("istio-ingressgateway", "istio-system", "gateway", values.MakeMap(v, "spec", "values"), nil)
	if err != nil {
		t.Fatalf("render istio/gateway: %v", err)
	}
	if len(warnings) > 0 {
		t.Logf("chart warnings: %v", warnings)
	}
	return ms
}

// helm install istio/gateway -f istio/helm-values-gateway.yaml, rendered with the chart
// istio.io/istio carries.
func TestHelmValues(t *testing.T) {
	d := deployment(t, renderGatewayChart(t, read(t, "helm-values-gateway.yaml")), "istio-ingressgateway")
	proxy := container(d.Spec.Template.Spec.Containers, "istio-proxy")
	if proxy == nil {
		t.Fatalf("no istio-proxy container: %v", d.Spec.Template.Spec.Containers)
	}
	mountsLibrary(t, "helm", d.Spec.Template.Spec, proxy.VolumeMounts)
	if d.Spec.Template.Labels["istio"] != "ingressgateway" {
		t.Errorf("pod labels %v: the EnvoyFilter selects istio: ingressgateway", d.Spec.Template.Labels)
	}
}

// istioctl install -f istio/istiooperator-gateway.yaml, rendered by istioctl's manifest
// generator.
func TestIstioOperator(t *testing.T) {
	f, _ := filepath.Abs("../istiooperator-gateway.yaml")
	sets, _, err := render.GenerateManifest([]string{f}, nil, false, nil, clog.NewDefaultLogger())
	if err != nil {
		t.Fatalf("manifest generate: %v", err)
	}
	var all []manifest.Manifest
	for _, s := range sets {
		all = append(all, s.Manifests...)
	}
	d := deployment(t, all, "istio-ingressgateway")
	proxy := container(d.Spec.Template.Spec.Containers, "istio-proxy")
	if proxy == nil {
		t.Fatal("no istio-proxy container")
	}
	mountsLibrary(t, "istiooperator", d.Spec.Template.Spec, proxy.VolumeMounts)
	if len(proxy.VolumeMounts) < 2 || len(d.Spec.Template.Spec.Volumes) < 2 {
		t.Errorf("the overlay replaced istio-proxy's mounts or the pod's volumes: %v", proxy.VolumeMounts)
	}
}

// The deployment patches, applied with Kubernetes' strategic merge to the Deployment the
// gateway chart renders (and to the demo's httpbin), give pods that mount the library.
func TestDeploymentPatches(t *testing.T) {
	base := deployment(t, renderGatewayChart(t, []byte("labels: {istio: ingressgateway}\n")), "istio-ingressgateway")
	baseJS, _ := json.Marshal(base)
	for _, f := range []string{"gateway-deployment-patch.yaml", "gateway-deployment-patch-hostpath.yaml"} {
		patch := &appsv1.Deployment{}
		strictYAML(t, read(t, f), patch)
		pjs, _ := yaml.YAMLToJSON(read(t, f))
		out, err := strategicpatch.StrategicMergePatch(baseJS, pjs, appsv1.Deployment{})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		d := &appsv1.Deployment{}
		if err := strictJSON(out, d); err != nil {
			t.Fatal(err)
		}
		proxy := container(d.Spec.Template.Spec.Containers, "istio-proxy")
		if proxy == nil || proxy.Image == "" || len(d.Spec.Template.Spec.Containers) != len(base.Spec.Template.Spec.Containers) {
			t.Fatalf("%s: the patch replaced the containers: %v", f, d.Spec.Template.Spec.Containers)
		}
		mountsLibrary(t, f, d.Spec.Template.Spec, proxy.VolumeMounts)
	}
	// The sidecar patch on the demo's httpbin: the injector mounts the volume named in the
	// annotation into istio-proxy.
	var httpbin *appsv1.Deployment
	for _, doc := range docs(read(t, "demo.yaml")) {
		if strings.Contains(doc, "kind: Deployment") {
			httpbin = &appsv1.Deployment{}
			strictYAML(t, []byte(doc), httpbin)
		}
	}
	hjs, _ := json.Marshal(httpbin)
	pjs, _ := yaml.YAMLToJSON(read(t, "sidecar-deployment-patch.yaml"))
	strictYAML(t, read(t, "sidecar-deployment-patch.yaml"), &appsv1.Deployment{})
	out, err := strategicpatch.StrategicMergePatch(hjs, pjs, appsv1.Deployment{})
	if err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{}
	if err := strictJSON(out, d); err != nil {
		t.Fatal(err)
	}
	var mounts []corev1.VolumeMount
	if err := json.Unmarshal([]byte(d.Spec.Template.Annotations["sidecar.istio.io/userVolumeMount"]), &mounts); err != nil {
		t.Fatalf("userVolumeMount: %v", err)
	}
	mountsLibrary(t, "sidecar", d.Spec.Template.Spec, mounts)
	if container(d.Spec.Template.Spec.Containers, "httpbin") == nil {
		t.Errorf("the patch replaced httpbin's containers")
	}
}

// The Kubernetes objects of the other files decode strictly into Kubernetes' types.
func TestKubernetesObjectsDecode(t *testing.T) {
	strictYAML(t, read(t, "moe-node-installer.yaml"), &appsv1.DaemonSet{})
	for _, doc := range docs(read(t, "demo.yaml")) {
		switch {
		case strings.Contains(doc, "kind: Namespace"):
			strictYAML(t, []byte(doc), &corev1.Namespace{})
		case strings.Contains(doc, "kind: Service\n"):
			strictYAML(t, []byte(doc), &corev1.Service{})
		case strings.Contains(doc, "kind: Deployment"):
			strictYAML(t, []byte(doc), &appsv1.Deployment{})
		}
	}
}

// The istiod these tests run is the Istio minor build/versions.env says the .so is for.
func TestIstiodIsThePinnedIstio(t *testing.T) {
	env, err := os.ReadFile("../../build/versions.env")
	if err != nil {
		t.Fatal(err)
	}
	want := ""
	for _, line := range strings.Split(string(env), "\n") {
		if v, ok := strings.CutPrefix(line, "ISTIO_MINOR="); ok {
			want = strings.TrimSpace(v)
		}
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "istio.io/istio").Output()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(got)) != want || want == "" {
		t.Errorf("istio.io/istio in go.mod is Istio %s, build/versions.env ISTIO_MINOR=%s", strings.TrimSpace(string(got)), want)
	}
}
