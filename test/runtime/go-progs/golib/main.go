// golib: Go code in a shared library (-buildmode=c-shared) that a C program loads and calls
// (integration/workloads/golib_host.c), for spanprof's tests of Go in shared objects: its
// frames are named from the library's own .gopclntab (addresses relative to its load bias).
//
// GoSpin(cpuSeconds, labelled) burns CPU in the chain main.libOuter -> main.libMiddle ->
// main.libLeaf (each kept out of line, fnv.Mix inlined into libLeaf) until the calling thread
// has used cpuSeconds of CPU time; with labelled != 0 under pprof goroutine labels span_id,
// trace_id and span_name (fixed ids, printed by the host). Returns the hash (so no work is
// optimized away).
package main

import "C"

import (
	"context"
	"runtime/pprof"
	"syscall"
	"time"

	"spanprof.test/goprogs/fnv"
)

// The ids GoSpin's labels carry (the host prints them for the test).
const (
	SpanID  = "00f067aa0ba902b7"
	TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
)

//go:noinline
func checkpoint(h uint64) uint64 { return h | 1 }

//go:noinline
func libLeaf(n int) uint64 {
	h := uint64(1469598103934665603)
	for i := 0; i < n; i++ {
		h = fnv.Mix(h, uint64(i))
		if i&0xffff == 0xffff {
			h = checkpoint(h)
		}
	}
	return h
}

//go:noinline
func libMiddle(n int) uint64 { return libLeaf(n) + 1 }

//go:noinline
func libOuter(n int) uint64 { return libMiddle(n) * 3 }

// threadCPU is the calling thread's CPU time (getrusage RUSAGE_THREAD): a cgo callback runs
// on the C caller's thread throughout.
func threadCPU() time.Duration {
	const rusageThread = 1
	var ru syscall.Rusage
	syscall.Getrusage(rusageThread, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func spin(d time.Duration) uint64 {
	var h uint64
	for end := threadCPU() + d; threadCPU() < end; {
		h ^= libOuter(1 << 22)
	}
	return h
}

//export GoSpin
func GoSpin(cpuSeconds C.double, labelled C.int) C.ulonglong {
	d := time.Duration(float64(cpuSeconds) * float64(time.Second))
	var h uint64
	if labelled == 0 {
		return C.ulonglong(spin(d))
	}
	pprof.Do(context.Background(), pprof.Labels("span_id", SpanID, "trace_id", TraceID,
		"span_name", "golib"), func(context.Context) { h = spin(d) })
	return C.ulonglong(h)
}

func main() {}
