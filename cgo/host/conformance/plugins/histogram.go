package plugins

/*
#cgo linux LDFLAGS: -Wl,-unresolved-symbols=ignore-all
#include <stdint.h>
// From contrib/golang/common/go/api/api.h (v1.39.0); resolved against the host at load time.
int envoyGoFilterHttpDefineMetric(void* c, uint32_t metric_type, void* name_data, int name_len,
                                  uint32_t* metric_id);
int envoyGoFilterHttpRecordMetric(void* c, uint32_t metric_id, uint64_t value);
*/
import "C"

import (
	"reflect"
	"unsafe"

	"github.com/envoyproxy/envoy/contrib/golang/common/go/api"
)

// The v1.39.0 Go SDK defines counters and gauges only (api.ConfigCallbacks); the C ABI also has
// histograms (DefineMetric type 2, RecordMetric). To reach them, the metric plugin calls the two
// C functions itself with the httpConfig* the SDK keeps as the first field of its
// *http.httpConfig (filter.go: `type httpConfig struct { config *C.httpConfig }`).

type histogram struct {
	config unsafe.Pointer
	id     uint32
}

// defineHistogram returns nil when the callbacks are not the SDK's *http.httpConfig.
func defineHistogram(cb api.ConfigCallbackHandler, name string) *histogram {
	v := reflect.ValueOf(cb)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Type().String() != "*http.httpConfig" {
		return nil
	}
	cfg := *(*unsafe.Pointer)(v.UnsafePointer())
	if cfg == nil {
		return nil
	}
	var id C.uint32_t
	if rc := C.envoyGoFilterHttpDefineMetric(cfg, C.uint32_t(api.Histogram), unsafe.Pointer(unsafe.StringData(name)), C.int(len(name)), &id); rc != 0 {
		return nil
	}
	return &histogram{config: cfg, id: uint32(id)}
}

func (h *histogram) record(v uint64) bool {
	return C.envoyGoFilterHttpRecordMetric(h.config, C.uint32_t(h.id), C.uint64_t(v)) == 0
}
