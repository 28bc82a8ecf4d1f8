package testplugins

import (
	"strconv"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/registry"
)

// streamBytes streams both bodies and adds each chunk's length to the counters
// bytes-in:<path> and bytes-out:<path> (served on /e2e/stats), so a test sees that Go's
// decodeData/encodeData ran on a stream's bytes: an upgraded (websocket) stream's pipe
// included. On the response headers it sets x-e2e-stream-bytes: <status>, which shows that
// encodeHeaders ran on them (a 101 included).
type streamBytes struct{ path string }

func (s *streamBytes) OnReceive(_ api.Context, h api.RequestHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	s.path = h.Path()
	return api.Continue
}

func (s *streamBytes) OnReceiveData(_ api.Context, chunk api.Buffer, _ bool) api.Status {
	countN("bytes-in:"+s.path, chunk.Len())
	return api.Continue
}

func (s *streamBytes) Append(_ api.Context, h api.ResponseHeaderMap, _ api.Buffer, _ api.HeaderMap) api.Status {
	_ = h.Set("x-e2e-stream-bytes", strconv.Itoa(h.Status()))
	return api.Continue
}

func (s *streamBytes) AppendData(_ api.Context, chunk api.Buffer, _ bool) api.Status {
	countN("bytes-out:"+s.path, chunk.Len())
	return api.Continue
}

func countN(name string, n int) {
	mu.Lock()
	counters[name] += n
	mu.Unlock()
}

func init() {
	registry.Register(registry.Plugin{
		Name:        "e2e-stream-bytes",
		Description: "e2e: counts the bytes of both bodies, chunk by chunk (streaming)",
		Factory:     func(any) api.Filter { return &streamBytes{} },
		Needs:       api.Needs{RequestBody: api.StreamingBody, ResponseBody: api.StreamingBody},
	})
}
