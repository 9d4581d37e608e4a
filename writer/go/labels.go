// SPDX-License-Identifier: Apache-2.0

// Package spanprofctx lets spanprof (and any profiler that reads Go goroutine labels and the
// OTEP 4719 process context) link a Go service's CPU samples to the OpenTelemetry spans they
// ran in, and name the service as its SDK does. One line:
//
//	provider := spanprofctx.NewTracerProvider(res, sdktrace.WithBatcher(exp))
//
// instead of sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithBatcher(exp)),
// or, for a provider built elsewhere, spanprofctx.Wrap(provider).
//
// Every sampled span started through the provider's tracers labels the calling goroutine
// with the pprof labels span_id (16 hex digits), trace_id (32 hex digits) and span_name
// while it runs; End gives the goroutine back the labels it had before Start. The returned
// context carries the labels too: goroutines started while the span runs inherit them (the Go
// runtime copies the creating goroutine's labels), and pprof.Do/SetGoroutineLabels with that
// context set them elsewhere. See docs/go.md.
package spanprofctx

import (
	"context"
	"runtime/pprof"
	"sync/atomic"
	"unsafe"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// The label keys spanprof reads (docs/go.md), the same as Grafana's otel-profiling-go.
const (
	LabelSpanID   = "span_id"
	LabelTraceID  = "trace_id"
	LabelSpanName = "span_name"
)

// The runtime's own getter and setter of the current goroutine's labels (the ones
// runtime/pprof.SetGoroutineLabels uses): an opaque pointer, compared and restored as is.
// The runtime keeps them for such uses (src/runtime/proflabel.go: "Do not remove or change
// the type signature").
//
//go:linkname runtimeGetProfLabel runtime/pprof.runtime_getProfLabel
func runtimeGetProfLabel() unsafe.Pointer

//go:linkname runtimeSetProfLabel runtime/pprof.runtime_setProfLabel
func runtimeSetProfLabel(labels unsafe.Pointer)

// TracerProvider is the SDK's TracerProvider (Shutdown, ForceFlush, RegisterSpanProcessor,
// ... as they are) whose tracers label goroutines with their spans.
type TracerProvider struct {
	*sdktrace.TracerProvider
}

// NewTracerProvider builds sdktrace.NewTracerProvider(sdktrace.WithResource(@res),
// @opts...) and publishes the resource the SDK uses (resource.Merge(resource.Environment(),
// @res), as WithResource does; resource.Default() for a nil @res) as the process context
// before returning, so that profiles carry the service's service.name from the process's
// first sample on. Give the resource here, not as a WithResource option in @opts. A
// process context that cannot be published (no memfd nor named anonymous memory) leaves the
// labels working; the error is what PublishResource says, reported by PublishError.
func NewTracerProvider(res *resource.Resource, opts ...sdktrace.TracerProviderOption) *TracerProvider {
	merged := resource.Default()
	if res != nil {
		if m, err := resource.Merge(resource.Environment(), res); err == nil {
			merged = m
		} else {
			merged = res // a schema URL conflict: what the SDK then keeps too
		}
	}
	publishErr.Store(errBox{PublishResource(merged)})
	all := append([]sdktrace.TracerProviderOption{sdktrace.WithResource(res)}, opts...)
	if res == nil {
		all = opts
	}
	return &TracerProvider{sdktrace.NewTracerProvider(all...)}
}

type errBox struct{ err error }

var publishErr atomic.Value

// PublishError is the error of the last process context publication (nil: published, or
// never tried).
func PublishError() error {
	if b, ok := publishErr.Load().(errBox); ok {
		return b.err
	}
	return nil
}

// Tracer returns the SDK's tracer, wrapped.
func (p *TracerProvider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return &tracer{tr: p.TracerProvider.Tracer(name, opts...)}
}

// Wrap returns a TracerProvider whose tracers label goroutines with their spans, for a
// provider built elsewhere (any trace.TracerProvider). With the SDK's provider, the resource
// of its first sampled span is published as the process context (that span's Start does it;
// until then profiles carry the environment's service name). Wrap(nil) is nil.
func Wrap(tp trace.TracerProvider) trace.TracerProvider {
	if tp == nil {
		return nil
	}
	return &provider{tp: tp}
}

type provider struct {
	embedded.TracerProvider
	tp trace.TracerProvider
}

func (p *provider) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return &tracer{tr: p.tp.Tracer(name, opts...)}
}

type tracer struct {
	embedded.Tracer
	tr trace.Tracer
}

// Start starts the span with the wrapped tracer; a sampled one (exported, so that its id is
// one the backend knows) labels the calling goroutine with its span_id, trace_id and
// span_name, and the returned context carries them (merged with the labels of @ctx).
// Spans that are not sampled change nothing.
func (t *tracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	ctx, span := t.tr.Start(ctx, name, opts...)
	sc := span.SpanContext()
	if !sc.IsValid() || !sc.IsSampled() {
		return ctx, span
	}
	if ro, ok := span.(interface{ Resource() *resource.Resource }); ok {
		if r := ro.Resource(); r != nil && proc.resource.Load() != r {
			publishErr.Store(errBox{PublishResource(r)})
		}
	}
	prev := runtimeGetProfLabel()
	ctx = pprof.WithLabels(ctx, pprof.Labels(LabelSpanID, sc.SpanID().String(),
		LabelTraceID, sc.TraceID().String(), LabelSpanName, name))
	pprof.SetGoroutineLabels(ctx)
	return ctx, &labelledSpan{Span: span, prev: prev, mine: runtimeGetProfLabel()}
}

// labelledSpan restores the goroutine's labels when the span ends.
type labelledSpan struct {
	trace.Span
	prev, mine unsafe.Pointer
	ended      atomic.Bool
}

// End ends the span and, on the goroutine that started it while it still has the span's
// labels (its child spans ended, nothing set others), puts back the labels that goroutine
// had before Start. Elsewhere (another goroutine ends the span, or the labels changed since)
// labels are left as they are: never set on a goroutine that did not start the span.
// (A goroutine started inside the span shares the span's labels: when it is the one to end
// the span, it is the one given the parent's labels.)
func (s *labelledSpan) End(opts ...trace.SpanEndOption) {
	s.Span.End(opts...)
	if s.ended.CompareAndSwap(false, true) && runtimeGetProfLabel() == s.mine {
		runtimeSetProfLabel(s.prev)
	}
}
