package filtermanager

import (
	"sync/atomic"
	"time"
	"unsafe"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/log"
	"github.com/moeproxy/moe/shared/registry"
	"github.com/moeproxy/moe/shared/variables"
)

// filters caches the typed interfaces of a created plugin filter. The hot
// ones are kept typed; the rest are asserted when used (rare phases), which
// keeps the per-request slot small.
type filters struct {
	recv api.ReceiverFilter
	send api.SenderFilter
	f    any
}

func (f *filters) recvData() api.StreamingReceiver { v, _ := f.f.(api.StreamingReceiver); return v }
func (f *filters) sendData() api.StreamingSender   { v, _ := f.f.(api.StreamingSender); return v }
func (f *filters) logger() api.AccessLogger        { v, _ := f.f.(api.AccessLogger); return v }
func (f *filters) destroyer() api.Destroyer        { v, _ := f.f.(api.Destroyer); return v }

// slot is one plugin of one request. *slot is the plugin's api.Context; its
// conversions *recvHandler and *sendHandler are the two handlers. Keeping them
// in one array inside the stream means a request costs no allocation per plugin.
type slot struct {
	s *stream
	p *plugin
	// fp points to the plugin's filters once they exist: f, or the plugin's
	// shared filters (sharedFilter); nil before. Read with an atomic load (a
	// plain load on amd64 and arm64) on the hot path, see filter and publish.
	fp unsafe.Pointer // *filters
	f  filters
}

func (sl *slot) loaded() *filters { return (*filters)(atomic.LoadPointer(&sl.fp)) }

func (sl *slot) isReady() bool { return sl.loaded() != nil }

// filter creates the plugin's filter on first use. Once a phase of the
// request went to a goroutine, that goroutine and the worker thread (encode,
// destroy) may race to create it, hence the lock; before that only the worker
// thread runs this request's phases and no lock is needed.
func (sl *slot) filter() *filters {
	if fp := sl.loaded(); fp != nil { // small enough to be inlined at every call
		return fp
	}
	return sl.firstUse()
}

func (sl *slot) firstUse() *filters {
	s := sl.s
	if !s.wentAsync {
		return sl.create()
	}
	// A lock of its own (not s.mu): the factory and handler setters are plugin
	// code and may call stream methods.
	s.createMu.Lock()
	defer s.createMu.Unlock()
	if fp := sl.loaded(); fp != nil {
		return fp
	}
	return sl.create()
}

func (sl *slot) create() *filters {
	p := sl.p
	if sh := p.shared; sh != nil {
		return sl.publish(sh)
	}
	f := p.factory(p.config)
	sl.f = filtersOf(f, p.hooks)
	h := p.hooks
	if h.Has(registry.HookReceiveSetter) {
		if hs, ok := f.(api.ReceiverHandlerSetter); ok {
			hs.SetReceiveFilterHandler((*recvHandler)(sl))
		}
	}
	if h.Has(registry.HookSendSetter) {
		if hs, ok := f.(api.SenderHandlerSetter); ok {
			hs.SetSenderFilterHandler((*sendHandler)(sl))
		}
	}
	return sl.publish(&sl.f)
}

// filtersOf is f with the phase interfaces it has. Only those the plugin's
// probed filter has (registry.Probe, once per config) are asserted: the
// assertions that fail are the costly ones, and a call site that sees many
// filter types misses Go's type-assertion cache.
func filtersOf(f api.Filter, h registry.Hooks) filters {
	fs := filters{f: f}
	if h.Has(registry.HookReceive) {
		fs.recv, _ = f.(api.ReceiverFilter)
	}
	if h.Has(registry.HookSend) {
		fs.send, _ = f.(api.SenderFilter)
	}
	return fs
}

// publish makes fp the slot's filters. An atomic store is a locked
// instruction (~5 ns, once per plugin and request); before the request's first
// goroutine starts, nothing else can read the pointer, and starting that
// goroutine publishes this plain write.
func (sl *slot) publish(fp *filters) *filters {
	if sl.s.wentAsync {
		atomic.StorePointer(&sl.fp, unsafe.Pointer(fp))
	} else {
		sl.fp = unsafe.Pointer(fp)
	}
	return fp
}

var _ api.Context = (*slot)(nil)

func (sl *slot) Deadline() (time.Time, bool)         { return time.Time{}, false }
func (sl *slot) Done() <-chan struct{}               { return sl.s.doneChan() }
func (sl *slot) Err() error                          { return sl.s.ctxErr() }
func (sl *slot) Value(any) any                       { return nil }
func (sl *slot) PluginName() string                  { return sl.p.name }
func (sl *slot) RequestID() string                   { return sl.s.requestID() }
func (sl *slot) Log() api.Logger                     { return slotLogger{sl} }
func (sl *slot) Receiver() api.ReceiverFilterHandler { return (*recvHandler)(sl) }
func (sl *slot) Sender() api.SenderFilterHandler     { return (*sendHandler)(sl) }
func (sl *slot) Var(name string) (string, bool)      { return variables.Lookup(sl, name) }

func (sl *slot) Reply(code int, body string, headers api.HeaderMap) api.Status {
	s := sl.s
	d := &s.dec
	s.mu.Lock()
	// Both sides can be active at once (a response arrives while a request-body
	// phase still runs in a goroutine): the side running this plugin answers.
	if s.enc.active && (!s.dec.active || s.enc.cur == sl.index()) {
		d = &s.enc
	}
	s.mu.Unlock()
	if err := s.setReply(d, sl.p.name, code, headers, body); err != nil {
		log.Printf(envoy.Debug, sl.p.name, s.requestID(), "reply %d not sent: %v", code, err)
	}
	return api.Stop
}

// index is the slot's position in the stream's slots (and the chain's
// plugins); only the rare Reply needs it, so it is not stored.
func (sl *slot) index() int {
	for i := range sl.s.slots {
		if &sl.s.slots[i] == sl {
			return i
		}
	}
	return -1
}

func (sl *slot) Consumer() *api.Consumer { return sl.s.getConsumer() }

func (sl *slot) SetConsumer(c *api.Consumer) { sl.s.setConsumer(sl.p.name, c) }

func (sl *slot) GetState(key string) (any, bool) { return sl.s.getState(key) }

func (sl *slot) SetState(key string, value any) { sl.s.setState(key, value) }

type slotLogger struct{ sl *slot }

func (l slotLogger) logf(level envoy.LogType, format string, args []any) {
	if !log.Enabled(level) {
		return
	}
	log.Printf(level, l.sl.p.name, l.sl.s.requestID(), format, args...)
}
func (l slotLogger) Debugf(format string, args ...any) { l.logf(envoy.Debug, format, args) }
func (l slotLogger) Infof(format string, args ...any)  { l.logf(envoy.Info, format, args) }
func (l slotLogger) Warnf(format string, args ...any)  { l.logf(envoy.Warn, format, args) }
func (l slotLogger) Errorf(format string, args ...any) { l.logf(envoy.Error, format, args) }
