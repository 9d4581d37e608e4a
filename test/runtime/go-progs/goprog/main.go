// goprog: a CPU-bound Go program with a known call chain for spanprof's tests:
// main.main -> main.outer -> main.middle -> main.leaf (each kept out of line), with
// fnv.Mix and fnv.rotate inlined into main.leaf.
//
// With "frameless", it spins in main.outerFlat -> main.middleFlat -> main.flatLeaf instead,
// where flatLeaf makes no call and so has no stack frame (a frame-pointer walk from inside
// it cannot see middleFlat).
//
// Usage: goprog CPU_SECONDS [-] [frameless]. Prints "ready" when it starts (with "-", then
// waits for a line on stdin: the tests' gate), then spins until it has used that much CPU
// time, and prints the hash (so no work is optimized away).
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"spanprof.test/goprogs/fnv"
)

// checkpoint is called now and then by leaf: the call gives leaf a stack frame of its own
// (a frameless function's caller is invisible to a frame-pointer walk).
//
//go:noinline
func checkpoint(h uint64) uint64 {
	return h | 1
}

//go:noinline
func leaf(n int) uint64 {
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
func middle(n int) uint64 {
	return leaf(n) + 1
}

//go:noinline
func outer(n int) uint64 {
	return middle(n) * 3
}

//go:noinline
func flatLeaf(n int) uint64 {
	h := uint64(1469598103934665603)
	for i := 0; i < n; i++ {
		h ^= uint64(i)
		h *= 1099511628211
	}
	return h
}

//go:noinline
func middleFlat(n int) uint64 {
	return flatLeaf(n) + 1
}

//go:noinline
func outerFlat(n int) uint64 {
	return middleFlat(n) * 3
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

func main() {
	limit := 1.0
	if len(os.Args) > 1 {
		v, err := strconv.ParseFloat(os.Args[1], 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "usage: goprog CPU_SECONDS")
			os.Exit(2)
		}
		limit = v
	}
	frameless := false
	for _, a := range os.Args[2:] {
		frameless = frameless || a == "frameless"
	}
	fmt.Println("ready")
	if len(os.Args) > 2 && os.Args[2] == "-" {
		bufio.NewReader(os.Stdin).ReadString('\n')
	}
	var sum uint64
	for cpuSeconds() < limit {
		if frameless {
			sum += outerFlat(1 << 18)
		} else {
			sum += outer(1 << 18)
		}
	}
	fmt.Println(sum)
}
