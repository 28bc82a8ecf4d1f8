package registry_test

import (
	"strings"
	"testing"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

type receiver struct{}

func (receiver) OnReceive(api.Context, api.RequestHeaderMap, api.Buffer, api.HeaderMap) api.Status {
	return api.Continue
}

// wrongAppend looks like a sender but takes api.HeaderMap: it would never be called.
type wrongAppend struct{ receiver }

func (wrongAppend) Append(api.Context, api.HeaderMap, api.Buffer, api.HeaderMap) api.Status {
	return api.Continue
}

type nothing struct{}

func (nothing) Helper() {}

type ptrSender struct{}

func (*ptrSender) Append(api.Context, api.ResponseHeaderMap, api.Buffer, api.HeaderMap) api.Status {
	return api.Continue
}

type fullLogger struct{ receiver }

func (fullLogger) Log(api.Context, api.RequestHeaderMap, api.ResponseHeaderMap, api.RequestInfo) {}
func (fullLogger) OnDestroy()                                                                    {}

func TestHooksOfReportsWhatAFilterImplementsOrWhyItCannot(t *testing.T) {
	for _, tc := range []struct {
		name  string
		f     any
		hooks registry.Hooks
		err   string // substring; "" = valid
	}{
		{"receiver", receiver{}, registry.HookReceive, ""},
		{"pointer sender", &ptrSender{}, registry.HookSend, ""},
		{"log and destroy", fullLogger{}, registry.HookReceive | registry.HookLog | registry.HookDestroy, ""},
		{"nil", nil, 0, "nil filter"},
		{"no phase", nothing{}, 0, "implements no phase; implement at least one of: OnReceive(ctx api.Context, headers api.RequestHeaderMap"},
		{"wrong signature", wrongAppend{}, 0, "method Append has signature Append(api.Context, api.HeaderMap, api.Buffer, api.HeaderMap) api.Status, want Append(ctx api.Context, headers api.ResponseHeaderMap, body api.Buffer, trailers api.HeaderMap) api.Status"},
		{"pointer receiver, value returned", ptrSender{}, 0, "method Append has a pointer receiver but the factory returns a registry_test.ptrSender value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := registry.HooksOf(tc.f)
			if tc.err == "" {
				if err != nil || h != tc.hooks {
					t.Fatalf("hooks %b err %v, want %b", h, err, tc.hooks)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err %v, want it to contain %q", err, tc.err)
			}
		})
	}
}

func TestCheckNeedsRefusesNeedsWithoutTheHook(t *testing.T) {
	for _, tc := range []struct {
		name  string
		needs api.Needs
		err   string
	}{
		{"headers only", api.Needs{}, ""},
		{"whole request body", api.Needs{RequestBody: api.WholeBody}, ""},
		{"streaming without data hook", api.Needs{RequestBody: api.StreamingBody}, "no OnReceiveData"},
		{"response body without sender", api.Needs{ResponseBody: api.WholeBody}, "no Append"},
		{"blocking response without sender", api.Needs{MayBlock: api.BlockSend}, "response phase may block"},
	} {
		err := registry.CheckNeeds(tc.needs, registry.HookReceive)
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}

func TestRegisterRefusesABrokenFilterAtStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    registry.Plugin
		want string
	}{
		{"wrong signature", registry.Plugin{Name: "contract-wrong", Factory: func(any) api.Filter { return wrongAppend{} }}, "method Append has signature"},
		{"no phase", registry.Plugin{Name: "contract-none", Factory: func(any) api.Filter { return nothing{} }}, "implements no phase"},
		{"needs", registry.Plugin{Name: "contract-needs", Factory: func(any) api.Filter { return receiver{} }, Needs: api.Needs{ResponseBody: api.StreamingBody}}, "no AppendData"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(r.(string), tc.want) || !strings.Contains(r.(string), tc.p.Name) {
					t.Fatalf("panic %v, want one naming %s and %q", r, tc.p.Name, tc.want)
				}
			}()
			registry.Register(tc.p)
			registry.Unregister(tc.p.Name)
		})
	}
}
