// golabels: a Go HTTP service whose requests run under pprof goroutine labels, as Go programs
// mark their spans (span_id, trace_id, span_name: what Grafana's otel-profiling-go sets since
// v0.6.0), for spanprof's goroutine-label tests.
//
// Two endpoints, /checkout and /search, each burn CPU in a function of its own
// (main.burnCheckout, main.burnSearch) inside pprof.Do with fresh random ids, and print one
// line per request: "span ENDPOINT TRACE_ID SPAN_ID". Between requests the client burns CPU in
// main.betweenRequests with no labels.
//
// Usage: golabels CPU_SECONDS [-] [spanonly]. Prints "ready" once it listens (with "-", then
// waits for a line on stdin: the tests' gate), sends requests from two client goroutines until
// the process has used CPU_SECONDS of CPU time, and exits. With "spanonly" the requests carry
// span_id and span_name only, as otel-profiling-go v0.5.x set them (no trace_id).
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"
)

var (
	spanOnly bool
	outMu    sync.Mutex
	sink     uint64
	sinkM    sync.Mutex
)

// checkpoint is called now and then by spin: the call gives spin a stack frame of its own
// (a frameless function's caller is invisible to a frame-pointer walk).
//
//go:noinline
func checkpoint(h uint64) uint64 {
	return h | 1
}

// spin burns about n iterations of integer work and returns something that depends on them.
//
//go:noinline
func spin(n int) uint64 {
	h := uint64(1469598103934665603)
	for i := 0; i < n; i++ {
		h = (h ^ uint64(i)) * 1099511628211
		if i&0xffff == 0xffff {
			h = checkpoint(h)
		}
	}
	return h
}

//go:noinline
func burnCheckout(n int) uint64 { return spin(n) }

//go:noinline
func burnSearch(n int) uint64 { return spin(n) ^ 1 }

//go:noinline
func betweenRequests(n int) uint64 { return spin(n) ^ 2 }

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func keep(h uint64) {
	sinkM.Lock()
	sink ^= h
	sinkM.Unlock()
}

func handler(name string, burn func(int) uint64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		traceID, spanID := randomHex(16), randomHex(8)
		outMu.Lock()
		fmt.Printf("span %s %s %s\n", name, traceID, spanID)
		outMu.Unlock()
		labels := pprof.Labels("span_id", spanID, "trace_id", traceID, "span_name", name)
		if spanOnly {
			labels = pprof.Labels("span_id", spanID, "span_name", name)
		}
		pprof.Do(r.Context(), labels, func(context.Context) {
			keep(burn(3000000))
		})
		io.WriteString(w, "ok\n")
	}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: golabels CPU_SECONDS [-]")
		os.Exit(2)
	}
	limit, err := strconv.ParseFloat(os.Args[1], 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "golabels: bad CPU_SECONDS:", err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "golabels:", err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/checkout", handler("checkout", burnCheckout))
	mux.HandleFunc("/search", handler("search", burnSearch))
	go http.Serve(ln, mux)
	fmt.Println("ready")
	spanOnly = len(os.Args) > 3 && os.Args[3] == "spanonly"
	if len(os.Args) > 2 && os.Args[2] == "-" {
		bufio.NewReader(os.Stdin).ReadString('\n')
	}
	base := "http://" + ln.Addr().String()
	var wg sync.WaitGroup
	for c := 0; c < 2; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			paths := []string{"/checkout", "/search"}
			for i := c; cpuSeconds() < limit; i++ {
				resp, err := http.Get(base + paths[i%2])
				if err != nil {
					fmt.Fprintln(os.Stderr, "golabels:", err)
					os.Exit(1)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				keep(betweenRequests(1000000))
			}
		}(c)
	}
	wg.Wait()
	outMu.Lock()
	fmt.Printf("done %d\n", sink&1)
	outMu.Unlock()
}
