package mirror

import (
	"math/rand/v2"
	"strconv"

	"github.com/moeproxy/moe/shared/api"
)

// filter is one request: the targets chosen for it and, while its body
// streams through, the copy of the body.
type filter struct {
	c      *Config
	picked []*target
	j      job // the snapshot every copy shares
	body   []byte
	// collecting: the body is being copied; the copies go out at its end.
	collecting bool
}

// bodiless methods: without content-length these carry no body (a request
// body needs content-length or chunked framing; Envoy hides the latter).
func bodiless(method string) bool {
	switch method {
	case "GET", "HEAD", "DELETE", "OPTIONS", "TRACE":
		return true
	}
	return false
}

// OnReceive chooses the targets (match, then percentage) and sends the
// copies of a bodiless request, or starts copying the body.
func (f *filter) OnReceive(ctx api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	for _, t := range f.c.targets {
		if t.match != nil && !t.match(ctx, h) {
			continue
		}
		if t.threshold < 1 && !(rand.Float64() < t.threshold) {
			continue
		}
		t.selected.Inc(1)
		f.picked = append(f.picked, t)
	}
	if len(f.picked) == 0 {
		return api.Continue
	}
	size := -1 // unknown
	if cl, ok := h.Get("content-length"); ok {
		if n, err := strconv.Atoi(cl); err == nil && n >= 0 {
			size = n
		}
	}
	if size == 0 || size < 0 && bodiless(h.Method()) {
		f.snapshot(h)
		f.dispatch(nil)
		return api.Continue
	}
	if f.c.MaxBody == 0 || size > f.c.MaxBody {
		f.skipBody()
		return api.Continue
	}
	f.snapshot(h)
	f.collecting = true
	if size > 0 {
		f.body = make([]byte, 0, size)
	}
	return api.Continue
}

// OnReceiveData copies the body as it passes (the original is never held
// back) and sends the copies at its end.
func (f *filter) OnReceiveData(_ api.Context, chunk api.Buffer, end bool) api.Status {
	if !f.collecting {
		return api.Continue
	}
	if chunk != nil && chunk.Len() > 0 {
		if len(f.body)+chunk.Len() > f.c.MaxBody {
			f.collecting, f.body = false, nil
			f.skipBody()
			return api.Continue
		}
		f.body = append(f.body, chunk.Bytes()...)
	}
	if end {
		f.collecting = false
		f.dispatch(f.body)
	}
	return api.Continue
}

func (f *filter) skipBody() {
	for _, t := range f.picked {
		t.skippedBody.Inc(1)
	}
}

// snapshot copies what the copies need from the request headers.
func (f *filter) snapshot(h api.RequestHeaderMap) {
	f.j.method, f.j.path = h.Method(), h.Path()
	f.j.host = h.Host() + f.c.HostSuffix
	f.j.header = make([][2]string, 0, h.Len())
	h.Range(func(k, v string) bool {
		f.j.header = append(f.j.header, [2]string{k, v})
		return true
	})
}

// dispatch queues one copy per chosen target; a full queue drops it.
func (f *filter) dispatch(body []byte) {
	for _, t := range f.picked {
		j := f.j
		j.t, j.body = t, body
		if !t.pool.offer(&j) {
			t.dropped.Inc(1)
		}
	}
}
