// Package plugins holds the Go HTTP filter plugins used by the moe-host conformance suite.
//
// They are written against the Envoy v1.39.0 Go SDK and are driven by plugin config and by
// request headers (all control headers start with "x-test-"), so one shared library covers every
// scenario. Registered plugin names:
//
//	conf         the main behaviour plugin (phases, sync/async, buffers, local replies, panics, ...)
//	reader       a second golang filter that reads what "conf" left behind (dynamic metadata,
//	             filter state)
//	echo         answers every request with a local reply
//	passthrough  api.PassThroughStreamFilter, used to count ABI crossings
//	routeconfig  per-route config with Merge
//	metric       DefineCounterMetric / DefineGaugeMetric
//
// Events: when a request carries "x-test-id: <id>", the plugins record what they saw (phases,
// chunk sizes, lifecycle callbacks, results of late goroutine calls) under that id. A later
// request with "x-test-query: <id>" through the conf plugin gets them back as the body of a
// 200 local reply, one event per line.
package plugins

import (
	"fmt"
	"strings"
	"sync"

	xds "github.com/cncf/xds/go/xds/type/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
)

const (
	maxEventIDs       = 4096
	maxEventsPerID    = 256
	maxEventDataBytes = 48
)

var (
	eventsMu sync.Mutex
	events   = map[string][]string{}
)

// record appends one event for the request id (no-op without an id). Bounded in ids and per id.
func record(id, format string, args ...any) {
	if id == "" {
		return
	}
	ev := fmt.Sprintf(format, args...)
	eventsMu.Lock()
	defer eventsMu.Unlock()
	if _, ok := events[id]; !ok && len(events) >= maxEventIDs {
		events = map[string][]string{}
	}
	if len(events[id]) < maxEventsPerID {
		events[id] = append(events[id], ev)
	}
}

func eventsOf(id string) string {
	eventsMu.Lock()
	defer eventsMu.Unlock()
	return strings.Join(events[id], "\n")
}

func short(b []byte) string {
	if len(b) > maxEventDataBytes {
		return string(b[:maxEventDataBytes]) + "..."
	}
	return string(b)
}

// structConfig decodes the plugin config: an xds.type.v3.TypedStruct, a google.protobuf.Struct, or
// nothing. Anything else is rejected, so a host that mangles the Any fails loudly.
func structConfig(a *anypb.Any) (map[string]any, error) {
	if a == nil || (a.GetTypeUrl() == "" && len(a.GetValue()) == 0) {
		return map[string]any{}, nil
	}
	switch {
	case strings.HasSuffix(a.GetTypeUrl(), "xds.type.v3.TypedStruct"):
		ts := &xds.TypedStruct{}
		if err := a.UnmarshalTo(ts); err != nil {
			return nil, fmt.Errorf("bad TypedStruct: %w", err)
		}
		if ts.GetValue() == nil {
			return map[string]any{}, nil
		}
		return ts.GetValue().AsMap(), nil
	case strings.HasSuffix(a.GetTypeUrl(), "google.protobuf.Struct"):
		s := &structpb.Struct{}
		if err := a.UnmarshalTo(s); err != nil {
			return nil, fmt.Errorf("bad Struct: %w", err)
		}
		return s.AsMap(), nil
	}
	return nil, fmt.Errorf("unsupported config type %q", a.GetTypeUrl())
}

func str(m map[string]any, k string) string {
	if v, ok := m[k].(string); ok {
		return v
	}
	return ""
}
