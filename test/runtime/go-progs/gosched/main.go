// gosched: goroutines under pprof labels that keep the Go scheduler and the runtime's system
// stack busy, for spanprof's test that no sample of the runtime's g0 (or gsignal) carries the
// labels of the goroutine its thread serves (m.curg) while the goroutines' own samples do.
//
// Four labelled workers (one span: span_id, trace_id, span_name "gosched") each loop over
// main.burnLabelled (CPU work), runtime.Gosched() (mcall -> gosched_m -> schedule on g0) and,
// every 8 rounds, a 1 MiB allocation (mallocgc -> systemstack -> the heap's allocLarge on
// g0); one of them also calls runtime.GC() every 16 rounds (systemstack calls, the world
// stopped and started). Two unlabelled goroutines (main.burnUnlabelled, Gosched) give
// the scheduler other goroutines to switch to. Prints "span gosched TRACE_ID SPAN_ID".
//
// Usage: gosched CPU_SECONDS [-]. Prints "ready"; with "-" waits for a line on stdin (the
// tests' gate), works until the process has used CPU_SECONDS of CPU time, and exits.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	sink  atomic.Uint64
	alloc [4][]byte
)

// spin burns about n iterations of integer work.
//
//go:noinline
func spin(n int) uint64 {
	h := uint64(1469598103934665603)
	for i := 0; i < n; i++ {
		h = (h ^ uint64(i)) * 1099511628211
	}
	return h
}

//go:noinline
func burnLabelled(n int) uint64 { return spin(n) }

//go:noinline
func burnUnlabelled(n int) uint64 { return spin(n) ^ 1 }

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: gosched CPU_SECONDS [-]")
		os.Exit(2)
	}
	limit, err := strconv.ParseFloat(os.Args[1], 64)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gosched: bad CPU_SECONDS:", err)
		os.Exit(2)
	}
	traceID, spanID := randomHex(16), randomHex(8)
	fmt.Printf("span gosched %s %s\n", traceID, spanID)
	fmt.Println("ready")
	if len(os.Args) > 2 && os.Args[2] == "-" {
		bufio.NewReader(os.Stdin).ReadString('\n')
	}
	var done atomic.Bool
	go func() {
		for cpuSeconds() < limit {
			time.Sleep(10 * time.Millisecond)
		}
		done.Store(true)
	}()
	labels := pprof.Labels("span_id", spanID, "trace_id", traceID, "span_name", "gosched")
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		w := w // go.mod says go 1.17: one w per loop, not per iteration
		wg.Add(1)
		go pprof.Do(context.Background(), labels, func(context.Context) {
			defer wg.Done()
			// Counted in rounds, not wall time: the same shares on a loaded machine.
			for i := 0; !done.Load(); i++ {
				sink.Add(burnLabelled(50000))
				runtime.Gosched()
				if i%8 == 0 {
					alloc[w] = make([]byte, 1<<20)
				}
				if w == 0 && i%16 == 0 {
					runtime.GC()
				}
			}
		})
	}
	for u := 0; u < 2; u++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				sink.Add(burnUnlabelled(20000))
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	fmt.Printf("done %d\n", sink.Load()&1)
}
