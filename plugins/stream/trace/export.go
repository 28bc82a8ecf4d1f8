package trace

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/moeproxy/moe/shared/api"
)

// spanRec is a finished request's span as the log hook hands it to the
// exporter's goroutine: plain values, so the request path never touches the
// SDK.
type spanRec struct {
	trace      traceID
	span       spanID
	parent     spanID // zero: a root span
	flags      byte
	tracestate string
	name       string
	start, end time.Time
	attrs      []attribute.KeyValue
	status     codes.Code
	statusMsg  string
	calls      []api.PluginCall
}

// pipeline is one exporter: a bounded queue of finished spans, a goroutine
// that turns them into SDK spans, and the SDK's batch span processor and
// OTLP/HTTP exporter. Configs with the same exporter settings share one
// (per-route configs, config updates).
type pipeline struct {
	key    string
	refs   int
	ch     chan *spanRec
	stop   chan struct{}
	done   chan struct{}
	closed atomic.Bool

	tp     *sdktrace.TracerProvider
	tracer oteltrace.Tracer

	dropped api.Counter
}

var (
	pipelinesMu sync.Mutex
	pipelines   = map[string]*pipeline{}
)

// pipelineKey identifies the exporter settings.
func pipelineKey(service string, e *Exporter) string {
	b, _ := json.Marshal(struct {
		S string
		E *Exporter
	}{service, e})
	return string(b)
}

func acquirePipeline(service string, e *Exporter, env api.ConfigEnv) (*pipeline, error) {
	key := pipelineKey(service, e)
	pipelinesMu.Lock()
	defer pipelinesMu.Unlock()
	if p, ok := pipelines[key]; ok {
		p.refs++
		return p, nil
	}
	opts := []otlptracehttp.Option{
		otlptracehttp.WithEndpointURL(e.Endpoint),
		otlptracehttp.WithTimeout(e.Timeout.D()),
		// A failed export is dropped and counted: retrying would hold the
		// queue for up to a minute while the collector is down.
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}),
		// The collector is reached directly, never through a proxy from the
		// environment.
		otlptracehttp.WithProxy(nil),
	}
	if len(e.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(e.Headers))
	}
	if e.Compression == "gzip" {
		opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
	} else {
		opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.NoCompression))
	}
	exp, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		return nil, api.FieldErrorf("exporter", "%v", err)
	}
	m := env.Metrics()
	ce := &countingExporter{SpanExporter: exp, exported: m.Counter("spans_exported"), failed: m.Counter("spans_failed"), log: env.Log(), endpoint: e.Endpoint}
	p := &pipeline{
		key:     key,
		refs:    1,
		ch:      make(chan *spanRec, e.QueueSize),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		dropped: m.Counter("spans_dropped"),
	}
	p.tp = sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", service))),
		sdktrace.WithSampler(sdktrace.AlwaysSample()), // the plugin samples; only sampled spans get here
		sdktrace.WithIDGenerator(idsFromContext{}),
		sdktrace.WithBatcher(ce,
			sdktrace.WithMaxQueueSize(e.QueueSize),
			sdktrace.WithMaxExportBatchSize(e.BatchSize),
			sdktrace.WithBatchTimeout(e.BatchTimeout.D()),
			sdktrace.WithExportTimeout(e.Timeout.D()),
			// Back-pressure goes to this pipeline's own queue, which drops
			// and counts; the SDK's queue then never drops silently.
			sdktrace.WithBlocking(),
		),
	)
	p.tracer = p.tp.Tracer("github.com/moeproxy/moe/plugins/stream/trace")
	pipelines[key] = p
	go p.run()
	return p, nil
}

// push hands a finished span over without blocking.
func (p *pipeline) push(r *spanRec) {
	if p.closed.Load() {
		p.dropped.Inc(1)
		return
	}
	select {
	case p.ch <- r:
	default:
		p.dropped.Inc(1)
	}
}

// release gives the pipeline back; the last holder flushes it (waiting at
// most timeout) and shuts the exporter down.
func (p *pipeline) release(timeout time.Duration) {
	pipelinesMu.Lock()
	p.refs--
	last := p.refs == 0
	if last {
		delete(pipelines, p.key)
	}
	pipelinesMu.Unlock()
	if !last {
		return
	}
	p.closed.Store(true)
	close(p.stop)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	select {
	case <-p.done:
	case <-ctx.Done():
	}
	_ = p.tp.Shutdown(ctx) // exports what the batch processor holds
}

func (p *pipeline) run() {
	defer close(p.done)
	for {
		select {
		case r := <-p.ch:
			p.emitSafe(r)
		case <-p.stop:
			for {
				select {
				case r := <-p.ch:
					p.emitSafe(r)
				default:
					return
				}
			}
		}
	}
}

// emitSafe never lets a panic in the SDK kill Envoy: the span is lost.
func (p *pipeline) emitSafe(r *spanRec) {
	defer func() {
		if recover() != nil {
			p.dropped.Inc(1)
		}
	}()
	p.emit(r)
}

type idsKey struct{}

// emit records r through the SDK with the ids the request already
// propagated upstream.
func (p *pipeline) emit(r *spanRec) {
	ctx := context.Background()
	if !r.parent.isZero() {
		ts, _ := oteltrace.ParseTraceState(r.tracestate)
		ctx = oteltrace.ContextWithRemoteSpanContext(ctx, oteltrace.NewSpanContext(oteltrace.SpanContextConfig{
			TraceID: oteltrace.TraceID(r.trace), SpanID: oteltrace.SpanID(r.parent),
			TraceFlags: oteltrace.TraceFlags(r.flags), TraceState: ts, Remote: true,
		}))
	}
	_, span := p.tracer.Start(context.WithValue(ctx, idsKey{}, r), r.name,
		oteltrace.WithSpanKind(oteltrace.SpanKindServer), oteltrace.WithTimestamp(r.start), oteltrace.WithAttributes(r.attrs...))
	if len(r.calls) > 0 {
		cctx := oteltrace.ContextWithSpanContext(context.Background(), span.SpanContext())
		for _, c := range r.calls {
			st := "continue"
			if c.Status == api.Stop {
				st = "stop"
			}
			_, cs := p.tracer.Start(cctx, c.Plugin+" "+c.Hook, oteltrace.WithSpanKind(oteltrace.SpanKindInternal), oteltrace.WithTimestamp(c.Start),
				oteltrace.WithAttributes(attribute.String("moe.plugin", c.Plugin), attribute.String("moe.hook", c.Hook), attribute.String("moe.status", st)))
			cs.End(oteltrace.WithTimestamp(c.Start.Add(c.Duration)))
		}
	}
	if r.status != codes.Unset {
		span.SetStatus(r.status, r.statusMsg)
	}
	span.End(oteltrace.WithTimestamp(r.end))
}

// idsFromContext gives the SDK the ids the plugin chose (and already sent
// upstream in traceparent); other spans (per-plugin children) get random ones.
type idsFromContext struct{}

func (idsFromContext) NewIDs(ctx context.Context) (oteltrace.TraceID, oteltrace.SpanID) {
	if r, ok := ctx.Value(idsKey{}).(*spanRec); ok {
		return oteltrace.TraceID(r.trace), oteltrace.SpanID(r.span)
	}
	return oteltrace.TraceID(newTraceID()), oteltrace.SpanID(newSpanID())
}

func (idsFromContext) NewSpanID(ctx context.Context, _ oteltrace.TraceID) oteltrace.SpanID {
	if r, ok := ctx.Value(idsKey{}).(*spanRec); ok {
		return oteltrace.SpanID(r.span)
	}
	return oteltrace.SpanID(newSpanID())
}

// countingExporter counts exported and failed spans and logs failures at
// most every 10 s. It reports success to the batch processor either way, so
// that the SDK does not log every failed batch through its global handler.
type countingExporter struct {
	sdktrace.SpanExporter
	exported, failed api.Counter
	log              api.Logger
	endpoint         string
	lastLog          atomic.Int64
}

func (e *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := e.SpanExporter.ExportSpans(ctx, spans); err != nil {
		e.failed.Inc(uint64(len(spans)))
		now := time.Now().UnixNano()
		if last := e.lastLog.Load(); now-last >= int64(10*time.Second) && e.lastLog.CompareAndSwap(last, now) {
			e.log.Errorf("exporting %d spans to %s failed: %v", len(spans), redact(e.endpoint), err)
		}
		return nil
	}
	e.exported.Inc(uint64(len(spans)))
	return nil
}
