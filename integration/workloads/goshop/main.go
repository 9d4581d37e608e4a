// goshop: a Go HTTP service instrumented with the OpenTelemetry Go SDK and spanprof's Go writer
// (writer/go, package spanprofctx) wired in one line, exactly as docs/go.md shows it; for
// integration/test_go_writer.py. Its spans are the ground truth: an exporter of its own writes
// every ended span as a JSON line (ids, name, times, resource) to SPANS_FILE.
//
// Two endpoints, each a server span with child spans, every span burning CPU in a function of
// its own (the test tells a sample's span by the function in its stack):
//
//	/checkout  span "checkout"       main.checkoutRoot  40 ms of CPU
//	           span "checkout.price" main.priceItems    60 ms
//	           span "checkout.tax"   main.computeTax    40 ms, in a goroutine started inside
//	                                 the span (it inherits the span's labels), waited for
//	           span "checkout"       main.writeReceipt  20 ms, after its children ended (the
//	                                 goroutine has the parent's labels back)
//	/search    span "search"         main.searchIndex   60 ms
//	           span "search.rank"    main.rankResults   50 ms
//
// Usage: goshop SPANS_FILE CPU_SECONDS [-]
// Prints "ready" once set up (with "-" it then waits for a line on stdin: the tests' gate),
// sends requests from two client goroutines until the process has used CPU_SECONDS of CPU
// time, flushes its spans and prints "done N" (N spans exported).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"spanprof.dev/writer/go/spanprofctx"
)

var (
	tracer trace.Tracer
	sink   atomic.Uint64
)

// ---- the ground truth: every exported span, one JSON line each ----

type spanLine struct {
	SpanID   string            `json:"span_id"`
	TraceID  string            `json:"trace_id"`
	Parent   string            `json:"parent_span_id"`
	Name     string            `json:"name"`
	StartNs  int64             `json:"start_ns"`
	EndNs    int64             `json:"end_ns"`
	Resource map[string]string `json:"resource"`
}

type fileExporter struct {
	mu  sync.Mutex
	enc *json.Encoder
	n   int
}

func (e *fileExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range spans {
		res := map[string]string{}
		for _, kv := range s.Resource().Attributes() {
			res[string(kv.Key)] = kv.Value.Emit()
		}
		line := spanLine{SpanID: s.SpanContext().SpanID().String(),
			TraceID: s.SpanContext().TraceID().String(), Name: s.Name(),
			StartNs: s.StartTime().UnixNano(), EndNs: s.EndTime().UnixNano(), Resource: res}
		if s.Parent().IsValid() {
			line.Parent = s.Parent().SpanID().String()
		}
		if err := e.enc.Encode(line); err != nil {
			return err
		}
		e.n++
	}
	return nil
}

func (e *fileExporter) Shutdown(context.Context) error { return nil }

// ---- CPU work ----

// threadCPU is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID).
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID,
		uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// spin burns d of the thread's CPU time (the goroutine locked to it) and returns what it
// computed.
//
//go:noinline
func spin(d time.Duration) uint64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	end := threadCPU() + d
	h := uint64(1469598103934665603)
	for threadCPU() < end {
		for i := 0; i < 50000; i++ {
			h = (h ^ uint64(i)) * 1099511628211
		}
	}
	return h
}

// One function per span: a sample's stack names the span it ran in.

//go:noinline
func checkoutRoot() { sink.Add(spin(40 * time.Millisecond)) }

//go:noinline
func priceItems() { sink.Add(spin(60 * time.Millisecond)) }

//go:noinline
func computeTax() { sink.Add(spin(40 * time.Millisecond)) }

//go:noinline
func writeReceipt() { sink.Add(spin(20 * time.Millisecond)) }

//go:noinline
func searchIndex() { sink.Add(spin(60 * time.Millisecond)) }

//go:noinline
func rankResults() { sink.Add(spin(50 * time.Millisecond)) }

func handleCheckout(w http.ResponseWriter, r *http.Request) {
	ctx, span := tracer.Start(r.Context(), "checkout", trace.WithSpanKind(trace.SpanKindServer))
	checkoutRoot()
	_, price := tracer.Start(ctx, "checkout.price")
	priceItems()
	price.End()
	_, tax := tracer.Start(ctx, "checkout.tax")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // started inside the tax span: runs under its labels
		defer wg.Done()
		computeTax()
	}()
	wg.Wait()
	tax.End()
	writeReceipt()
	span.End()
	io.WriteString(w, "ok\n")
}

func handleSearch(w http.ResponseWriter, r *http.Request) {
	ctx, span := tracer.Start(r.Context(), "search", trace.WithSpanKind(trace.SpanKindServer))
	searchIndex()
	_, rank := tracer.Start(ctx, "search.rank")
	rankResults()
	rank.End()
	span.End()
	io.WriteString(w, "ok\n")
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "goshop:", err)
	os.Exit(1)
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: goshop SPANS_FILE CPU_SECONDS [-]")
		os.Exit(2)
	}
	limit, err := strconv.ParseFloat(os.Args[2], 64)
	if err != nil {
		fail(err)
	}
	out, err := os.Create(os.Args[1])
	if err != nil {
		fail(err)
	}
	exp := &fileExporter{enc: json.NewEncoder(out)}
	res := resource.NewSchemaless(semconv.ServiceName("go-shop"), semconv.ServiceVersion("1.4.2"))

	// The wiring of docs/go.md (integration/test_go_writer.py checks it is the same):
	provider := spanprofctx.NewTracerProvider(res, sdktrace.WithBatcher(exp))
	tracer = provider.Tracer("goshop")
	if err := spanprofctx.PublishError(); err != nil {
		fail(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/checkout", handleCheckout)
	mux.HandleFunc("/search", handleSearch)
	go http.Serve(ln, mux)
	fmt.Println("ready")
	if len(os.Args) > 3 && os.Args[3] == "-" {
		bufio.NewReader(os.Stdin).ReadString('\n')
	}
	base := "http://" + ln.Addr().String()
	paths := []string{"/checkout", "/search"}
	var wg sync.WaitGroup
	for c := 0; c < 2; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := c; cpuSeconds() < limit; i++ {
				resp, err := http.Get(base + paths[i%len(paths)])
				if err != nil {
					fail(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}(c)
	}
	wg.Wait()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := provider.Shutdown(sctx); err != nil {
		fail(err)
	}
	if err := out.Close(); err != nil {
		fail(err)
	}
	fmt.Printf("done %d\n", exp.n)
}
