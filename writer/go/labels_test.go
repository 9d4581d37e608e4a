// SPDX-License-Identifier: Apache-2.0

package spanprofctx

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

var probe sync.Mutex

// goroutineLabels returns the calling goroutine's pprof labels as the runtime's goroutine
// profile shows them (independent of this package: what a profiler sees).
func goroutineLabels(t *testing.T) map[string]string {
	t.Helper()
	probe.Lock() // one goroutine at a time in labelsOfProbe: its record is the caller's
	defer probe.Unlock()
	return labelsOfProbe(t)
}

//go:noinline
func labelsOfProbe(t *testing.T) map[string]string {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		t.Fatal(err)
	}
	found := []map[string]string{}
	for _, rec := range strings.Split(buf.String(), "\n\n") {
		if !strings.Contains(rec, "spanprofctx.labelsOfProbe+") {
			continue
		}
		got := map[string]string{}
		for _, line := range strings.Split(rec, "\n") {
			if s, ok := strings.CutPrefix(line, "# labels: "); ok {
				if err := json.Unmarshal([]byte(s), &got); err != nil {
					t.Fatalf("labels %q: %v", s, err)
				}
			}
		}
		found = append(found, got)
	}
	if len(found) != 1 {
		t.Fatalf("%d goroutines in labelsOfProbe:\n%s", len(found), buf.String())
	}
	return found[0]
}

func spanLabels(sc trace.SpanContext, name string, extra ...string) map[string]string {
	m := map[string]string{LabelSpanID: sc.SpanID().String(),
		LabelTraceID: sc.TraceID().String(), LabelSpanName: name}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

func want(t *testing.T, what string, got, exp map[string]string) {
	t.Helper()
	if len(got) != len(exp) {
		t.Errorf("%s: labels %v, want %v", what, got, exp)
		return
	}
	for k, v := range exp {
		if got[k] != v {
			t.Errorf("%s: labels %v, want %v", what, got, exp)
			return
		}
	}
}

func newRecorded(t *testing.T, sampler sdktrace.Sampler) (trace.Tracer, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := Wrap(sdktrace.NewTracerProvider(sdktrace.WithSampler(sampler),
		sdktrace.WithSpanProcessor(rec)))
	return tp.Tracer("test"), rec
}

func TestNestedSpansLabelAndRestore(t *testing.T) {
	tr, rec := newRecorded(t, sdktrace.AlwaysSample())
	want(t, "before", goroutineLabels(t), nil)

	ctx, root := tr.Start(context.Background(), "root")
	want(t, "root", goroutineLabels(t), spanLabels(root.SpanContext(), "root"))
	cctx, child := tr.Start(ctx, "child")
	want(t, "child", goroutineLabels(t), spanLabels(child.SpanContext(), "child"))
	if child.SpanContext().TraceID() != root.SpanContext().TraceID() {
		t.Fatal("child in another trace")
	}
	_, grand := tr.Start(cctx, "grandchild")
	want(t, "grandchild", goroutineLabels(t), spanLabels(grand.SpanContext(), "grandchild"))
	grand.End()
	want(t, "grandchild ended", goroutineLabels(t), spanLabels(child.SpanContext(), "child"))
	child.End()
	want(t, "child ended", goroutineLabels(t), spanLabels(root.SpanContext(), "root"))
	// A sibling started from the root's context: labelled as itself, then back to the root.
	_, sib := tr.Start(ctx, "sibling")
	want(t, "sibling", goroutineLabels(t), spanLabels(sib.SpanContext(), "sibling"))
	sib.End()
	want(t, "sibling ended", goroutineLabels(t), spanLabels(root.SpanContext(), "root"))
	root.End()
	root.End() // twice: restores nothing more
	want(t, "root ended", goroutineLabels(t), nil)
	if n := len(rec.Ended()); n != 4 {
		t.Errorf("%d spans ended, want 4", n)
	}
}

func TestGoroutinesInheritTheSpanLabels(t *testing.T) {
	tr, _ := newRecorded(t, sdktrace.AlwaysSample())
	ctx, root := tr.Start(context.Background(), "root")
	defer root.End()
	cctx, child := tr.Start(ctx, "child")
	exp := spanLabels(child.SpanContext(), "child")
	var got, gotDo map[string]string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // started inside the span: the runtime copies the creator's labels
		defer wg.Done()
		got = goroutineLabels(t)
	}()
	wg.Wait()
	want(t, "goroutine started in the child span", got, exp)
	child.End()
	wg.Add(1)
	go func() { // started after the span ended, labelled with its context by pprof.Do
		defer wg.Done()
		pprof.Do(cctx, pprof.Labels("worker", "1"), func(context.Context) {
			gotDo = goroutineLabels(t)
		})
	}()
	wg.Wait()
	want(t, "pprof.Do with the span's context", gotDo, spanLabels(child.SpanContext(), "child",
		"worker", "1"))
	// A span started on another goroutine labels that goroutine, not this one.
	var other map[string]string
	var osc trace.SpanContext
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, sp := tr.Start(ctx, "other")
		osc = sp.SpanContext()
		other = goroutineLabels(t)
		sp.End()
	}()
	wg.Wait()
	want(t, "span on another goroutine", other, spanLabels(osc, "other"))
	want(t, "this goroutine", goroutineLabels(t), spanLabels(root.SpanContext(), "root"))
}

func TestEndElsewhereLeavesLabels(t *testing.T) {
	tr, _ := newRecorded(t, sdktrace.AlwaysSample())
	_, sp := tr.Start(context.Background(), "a")
	exp := spanLabels(sp.SpanContext(), "a")
	var other map[string]string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // an unlabelled goroutine (its creator set none) ends the span
		defer wg.Done()
		pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("k", "v")))
		sp.End()
		other = goroutineLabels(t)
	}()
	wg.Wait()
	want(t, "ending goroutine", other, map[string]string{"k": "v"})
	want(t, "starting goroutine", goroutineLabels(t), exp)
	pprof.SetGoroutineLabels(context.Background())
}

func TestExistingLabelsAreKeptAndRestored(t *testing.T) {
	tr, _ := newRecorded(t, sdktrace.AlwaysSample())
	pprof.Do(context.Background(), pprof.Labels("http.route", "/x"), func(ctx context.Context) {
		_, sp := tr.Start(ctx, "handler")
		want(t, "in span", goroutineLabels(t), spanLabels(sp.SpanContext(), "handler",
			"http.route", "/x"))
		sp.End()
		want(t, "span ended", goroutineLabels(t), map[string]string{"http.route": "/x"})
	})
	want(t, "after pprof.Do", goroutineLabels(t), nil)
}

func TestUnsampledSpansChangeNothing(t *testing.T) {
	tr, _ := newRecorded(t, sdktrace.NeverSample())
	ctx, sp := tr.Start(context.Background(), "dropped")
	if sp.SpanContext().IsSampled() {
		t.Fatal("sampled")
	}
	want(t, "unsampled span", goroutineLabels(t), nil)
	if len(pprofLabels(ctx)) != 0 {
		t.Errorf("context labels %v", pprofLabels(ctx))
	}
	sp.End()
	// Recorded but not sampled (not exported): no link to a span the backend never gets.
	rtr, _ := newRecorded(t, recordOnly{})
	_, rsp := rtr.Start(context.Background(), "record-only")
	if !rsp.IsRecording() || rsp.SpanContext().IsSampled() {
		t.Fatal("not record-only")
	}
	want(t, "record-only span", goroutineLabels(t), nil)
	rsp.End()
}

type recordOnly struct{}

func (recordOnly) ShouldSample(sdktrace.SamplingParameters) sdktrace.SamplingResult {
	return sdktrace.SamplingResult{Decision: sdktrace.RecordOnly}
}
func (recordOnly) Description() string { return "record only" }

func pprofLabels(ctx context.Context) map[string]string {
	m := map[string]string{}
	pprof.ForLabels(ctx, func(k, v string) bool { m[k] = v; return true })
	return m
}

func TestContextCarriesLabels(t *testing.T) {
	tr, _ := newRecorded(t, sdktrace.AlwaysSample())
	ctx, sp := tr.Start(context.Background(), "c")
	defer sp.End()
	want(t, "context", pprofLabels(ctx), spanLabels(sp.SpanContext(), "c"))
}

func TestProviderPublishesTheSDKResource(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=unit")
	res := resource.NewSchemaless(attribute.String("service.name", "unit-svc"))
	rec := tracetest.NewSpanRecorder()
	tp := NewTracerProvider(res, sdktrace.WithSpanProcessor(rec))
	defer Unpublish()
	if err := PublishError(); err != nil {
		t.Fatal(err)
	}
	ctx := readContext(t)
	if ctx["service.name"] != "unit-svc" || ctx["deployment.environment.name"] != "unit" {
		t.Fatalf("published %v", ctx)
	}
	_, sp := tp.Tracer("t").Start(context.Background(), "s")
	sp.End()
	// What the SDK exported is what was published.
	for _, kv := range rec.Ended()[0].Resource().Attributes() {
		if ctx[string(kv.Key)] != kv.Value.Emit() {
			t.Errorf("%s: SDK %q, published %q", kv.Key, kv.Value.Emit(), ctx[string(kv.Key)])
		}
	}
}
