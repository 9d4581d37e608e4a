// gosdkapp: a Go HTTP service instrumented with the OpenTelemetry Go SDK, for spanprof's Go
// end-to-end test (integration/test_go_sdk_e2e.py). Its spans go to a Collector over OTLP gRPC;
// each span's work runs under pprof goroutine labels span_id, trace_id and span_name (the
// wrapper withSpanLabels, as Grafana's otel-profiling-go marks spans), which spanprof reads
// from the running goroutine and turns into the samples' links.
//
// Three endpoints, each with a handler of its own that burns CPU: /checkout (main.handleCheckout,
// 180 ms of CPU), /search (main.handleSearch, 130 ms) and /render (main.handleRender, 10 ms).
// Each span records the CPU time its work used (attribute burn.cpu_ms): the goroutine is locked
// to its thread while it burns, so the thread's CPU clock is the span's.
//
// Usage: gosdkapp OTLP_GRPC_ENDPOINT CPU_SECONDS [-]
// Prints "ready" once set up (with "-" it then waits for a line on stdin: the tests' gate),
// sends requests from two client goroutines until the process has used CPU_SECONDS of CPU time,
// flushes its spans and prints "done N" (N spans ended).
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

var (
	tracer trace.Tracer
	sink   atomic.Uint64
	ended  atomic.Int64
)

// withSpanLabels runs f under pprof goroutine labels naming the span of ctx: what Grafana's
// otel-profiling-go does (span_id, span_name), plus the trace id, which an OTLP link needs.
// Goroutines f starts inherit the labels.
func withSpanLabels(ctx context.Context, name string, f func(context.Context)) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		f(ctx)
		return
	}
	pprof.Do(ctx, pprof.Labels("span_id", sc.SpanID().String(), "trace_id",
		sc.TraceID().String(), "span_name", name), f)
}

// threadCPU is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID).
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID,
		uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// checkpoint gives spin a stack frame of its own (called now and then).
//
//go:noinline
func checkpoint(h uint64) uint64 { return h | 1 }

// spin burns CPU until the thread has used d of it and returns what it computed.
//
//go:noinline
func spin(d time.Duration) uint64 {
	end := threadCPU() + d
	h := uint64(1469598103934665603)
	for threadCPU() < end {
		for i := 0; i < 20000; i++ {
			h = (h ^ uint64(i)) * 1099511628211
		}
		h = checkpoint(h)
	}
	return h
}

// serve runs one request's span: the endpoint's work under the span's labels, locked to the
// thread so that its CPU time is measured, then the span ends.
func serve(w http.ResponseWriter, r *http.Request, name string, work func() time.Duration) {
	ctx, span := tracer.Start(r.Context(), name, trace.WithSpanKind(trace.SpanKindServer))
	var used time.Duration
	withSpanLabels(ctx, name, func(context.Context) {
		runtime.LockOSThread()
		used = work()
		runtime.UnlockOSThread()
	})
	span.SetAttributes(attribute.Float64("burn.cpu_ms", float64(used)/1e6))
	span.End()
	ended.Add(1)
	io.WriteString(w, "ok\n")
}

// One handler function per endpoint: a span's samples show its own.

//go:noinline
func handleCheckout(w http.ResponseWriter, r *http.Request) {
	serve(w, r, "checkout", func() time.Duration {
		t := threadCPU()
		sink.Add(spin(180 * time.Millisecond))
		return threadCPU() - t
	})
}

//go:noinline
func handleSearch(w http.ResponseWriter, r *http.Request) {
	serve(w, r, "search", func() time.Duration {
		t := threadCPU()
		sink.Add(spin(130 * time.Millisecond))
		return threadCPU() - t
	})
}

//go:noinline
func handleRender(w http.ResponseWriter, r *http.Request) {
	serve(w, r, "render", func() time.Duration {
		t := threadCPU()
		sink.Add(spin(10 * time.Millisecond))
		return threadCPU() - t
	})
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gosdkapp:", err)
	os.Exit(1)
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: gosdkapp OTLP_GRPC_ENDPOINT CPU_SECONDS [-]")
		os.Exit(2)
	}
	limit, err := strconv.ParseFloat(os.Args[2], 64)
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(os.Args[1]),
		otlptracegrpc.WithInsecure())
	if err != nil {
		fail(err)
	}
	res := resource.NewSchemaless(semconv.ServiceName("go-sdk-e2e"))
	provider := sdktrace.NewTracerProvider(sdktrace.WithResource(res),
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(500*time.Millisecond)))
	tracer = provider.Tracer("gosdkapp")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/checkout", handleCheckout)
	mux.HandleFunc("/search", handleSearch)
	mux.HandleFunc("/render", handleRender)
	go http.Serve(ln, mux)
	fmt.Println("ready")
	if len(os.Args) > 3 && os.Args[3] == "-" {
		bufio.NewReader(os.Stdin).ReadString('\n')
	}
	base := "http://" + ln.Addr().String()
	paths := []string{"/checkout", "/search", "/render"}
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
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := provider.Shutdown(sctx); err != nil {
		fail(err)
	}
	fmt.Printf("done %d\n", ended.Load())
}
