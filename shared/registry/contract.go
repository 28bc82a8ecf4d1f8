package registry

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/moeproxy/moe/shared/api"
)

// Hooks is the set of filter interfaces a plugin's filter implements.
type Hooks uint16

const (
	HookReceive       Hooks = 1 << iota // api.ReceiverFilter
	HookSend                            // api.SenderFilter
	HookReceiveData                     // api.StreamingReceiver
	HookSendData                        // api.StreamingSender
	HookLog                             // api.AccessLogger
	HookDestroy                         // api.Destroyer
	HookReceiveSetter                   // api.ReceiverHandlerSetter
	HookSendSetter                      // api.SenderHandlerSetter

	// phaseHooks are the hooks that make a filter do something (handler setters alone do not).
	phaseHooks = HookReceive | HookSend | HookReceiveData | HookSendData | HookLog | HookDestroy
)

// Has reports whether all of h2 are in h.
func (h Hooks) Has(h2 Hooks) bool { return h&h2 == h2 }

// hookSpec is one method the framework calls, with the signature it expects,
// so that a method of the right name and the wrong shape is reported instead
// of silently never being called.
type hookSpec struct {
	hook  Hooks
	iface reflect.Type
	sig   string
}

var hookSpecs = []hookSpec{
	{HookReceive, typeOf[api.ReceiverFilter](), "OnReceive(ctx api.Context, headers api.RequestHeaderMap, body api.Buffer, trailers api.HeaderMap) api.Status"},
	{HookSend, typeOf[api.SenderFilter](), "Append(ctx api.Context, headers api.ResponseHeaderMap, body api.Buffer, trailers api.HeaderMap) api.Status"},
	{HookReceiveData, typeOf[api.StreamingReceiver](), "OnReceiveData(ctx api.Context, chunk api.Buffer, endStream bool) api.Status"},
	{HookSendData, typeOf[api.StreamingSender](), "AppendData(ctx api.Context, chunk api.Buffer, endStream bool) api.Status"},
	{HookLog, typeOf[api.AccessLogger](), "Log(ctx api.Context, reqHeaders api.RequestHeaderMap, respHeaders api.ResponseHeaderMap, info api.RequestInfo)"},
	{HookDestroy, typeOf[api.Destroyer](), "OnDestroy()"},
	{HookReceiveSetter, typeOf[api.ReceiverHandlerSetter](), "SetReceiveFilterHandler(h api.ReceiverFilterHandler)"},
	{HookSendSetter, typeOf[api.SenderHandlerSetter](), "SetSenderFilterHandler(h api.SenderFilterHandler)"},
}

func typeOf[T any]() reflect.Type { return reflect.TypeOf((*T)(nil)).Elem() }

// methodName is the name of the interface's only method.
func (s hookSpec) methodName() string { return s.iface.Method(0).Name }

// HooksOf returns the hooks filter f implements, or an error when f cannot be
// a filter: nil, a method named like a hook whose signature differs (it would
// never be called), a hook method with a pointer receiver on a filter returned
// by value, or no phase at all (nothing would ever run).
func HooksOf(f api.Filter) (Hooks, error) {
	if f == nil {
		return 0, fmt.Errorf("the factory returned a nil filter")
	}
	t := reflect.TypeOf(f)
	var h Hooks
	var problems []string
	for _, s := range hookSpecs {
		if t.Implements(s.iface) {
			h |= s.hook
			continue
		}
		name := s.methodName()
		if m, ok := t.MethodByName(name); ok {
			problems = append(problems, fmt.Sprintf("method %s has signature %s, want %s", name, signature(m), s.sig))
			continue
		}
		if t.Kind() != reflect.Pointer {
			if _, ok := reflect.PointerTo(t).MethodByName(name); ok && reflect.PointerTo(t).Implements(s.iface) {
				problems = append(problems, fmt.Sprintf("method %s has a pointer receiver but the factory returns a %s value: return &%s{...}", name, t, t.Name()))
			}
		}
	}
	if len(problems) > 0 {
		return 0, fmt.Errorf("filter type %s: %s", t, strings.Join(problems, "; "))
	}
	if h&phaseHooks == 0 {
		return 0, fmt.Errorf("filter type %s implements no phase; implement at least one of: %s", t, phaseSignatures())
	}
	return h, nil
}

// signature formats a method found on a type (its first parameter is the
// receiver) as Name(params) results.
func signature(m reflect.Method) string {
	var in, out []string
	for i := 1; i < m.Type.NumIn(); i++ {
		in = append(in, m.Type.In(i).String())
	}
	for i := 0; i < m.Type.NumOut(); i++ {
		out = append(out, m.Type.Out(i).String())
	}
	sig := m.Name + "(" + strings.Join(in, ", ") + ")"
	switch len(out) {
	case 0:
		return sig
	case 1:
		return sig + " " + out[0]
	}
	return sig + " (" + strings.Join(out, ", ") + ")"
}

func phaseSignatures() string {
	var sigs []string
	for _, s := range hookSpecs {
		if s.hook&phaseHooks != 0 {
			sigs = append(sigs, s.sig)
		}
	}
	return strings.Join(sigs, "; ")
}

// CheckNeeds reports Needs that contradict the hooks: a body mode or blocking
// phase declared for a direction the filter has no hook for.
func CheckNeeds(n api.Needs, h Hooks) error {
	switch {
	case n.RequestBody == api.StreamingBody && !h.Has(HookReceiveData):
		return fmt.Errorf("needs a streaming request body but the filter has no OnReceiveData")
	case n.ResponseBody == api.StreamingBody && !h.Has(HookSendData):
		return fmt.Errorf("needs a streaming response body but the filter has no AppendData")
	case n.RequestBody == api.WholeBody && !h.Has(HookReceive):
		return fmt.Errorf("needs the whole request body but the filter has no OnReceive")
	case n.ResponseBody == api.WholeBody && !h.Has(HookSend):
		return fmt.Errorf("needs the whole response body but the filter has no Append")
	case n.MayBlock&api.BlockReceive != 0 && h&(HookReceive|HookReceiveData) == 0:
		return fmt.Errorf("declares that the request phase may block but the filter has no OnReceive or OnReceiveData")
	case n.MayBlock&api.BlockSend != 0 && h&(HookSend|HookSendData) == 0:
		return fmt.Errorf("declares that the response phase may block but the filter has no Append or AppendData")
	}
	return nil
}

// Probe builds one filter for cfg and checks it against the plugin contract
// (HooksOf, CheckNeeds). The framework calls it once per config version; a
// plugin that breaks the contract is rejected with a config error naming the
// expected signature instead of registering and silently doing nothing.
func Probe(p *Plugin, cfg any, needs api.Needs) (h Hooks, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the factory panicked on a parsed config: %v", r)
		}
	}()
	h, err = HooksOf(p.Factory(cfg))
	if err != nil {
		return 0, err
	}
	return h, CheckNeeds(needs, h)
}
