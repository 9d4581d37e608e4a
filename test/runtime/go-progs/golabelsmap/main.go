// golabelsmap: goroutine labels laid out as Go 1.18-1.23 keep them, run by a newer Go, for
// spanprof's test of its reader of those releases' labels (integration/test_go.py).
//
// Before Go 1.24, runtime/pprof's labelMap is a map[string]string and g.labels points to a
// labelMap variable: a pointer to the map's header (hmap), whose buckets (bmap) hold the
// labels (src/runtime/map.go of those releases). Newer releases keep a sorted slice instead,
// so this program builds such maps itself, in its own memory, field by field as that map.go
// lays them out, and installs each as the labels of the goroutine that burns CPU under it
// (runtime/pprof.runtime_setProfLabel, the runtime's own setter, which stores the pointer
// as it is). The test then makes spanprof see the binary as a pre-1.24 one. Nothing here
// reads the labels back through the runtime (no goroutine profile, no CPU profile, no new
// goroutines from a labelled one), which would take them for the newer form.
//
// One goroutine per map, each burning CPU in a function of its own:
//
//	main.burnSmall     3 labels and a deleted cell (emptyOne) in one bucket, span_id and trace_id
//	main.burnOverflow  12 labels in 2 buckets, one with an overflow bucket (9 keys collide)
//	main.burnMany      20 labels in 4 buckets (more than the 16 that are copied)
//	main.burnGrowing   a map being grown (oldbuckets set): skipped
//	main.burnHuge      64 buckets (B = 6): skipped
//	main.burnGarbage   an evacuated mark (tophash 2) in a map not being grown: dropped
//	main.burnMiscount  a header counting 5 cells over 3 full ones: dropped
//
// Usage: golabelsmap CPU_SECONDS. Prints each map's labels as "labels FUNCTION KEY=VALUE ...",
// then "ready", waits for a line on stdin (the tests' gate), burns until the process has used
// CPU_SECONDS of CPU time, and exits.
package main

import (
	"bufio"
	"context"
	"fmt"
	"hash/fnv"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"
)

// setProfLabel is the runtime's runtime_setProfLabel: g.m.curg.labels = labels.
//
//go:linkname setProfLabel runtime/pprof.runtime_setProfLabel
func setProfLabel(labels unsafe.Pointer)

// The Go 1.18-1.23 map header and bucket of a map[string]string on amd64 (src/runtime/map.go:
// hmap, and bmap with its keys, elems and overflow pointer that the compiler adds).
const (
	bucketCnt      = 8
	emptyRest      = 0 // this cell and every one after it, overflow buckets included, empty
	emptyOne       = 1 // this cell empty
	evacuatedX     = 2 // only in the old buckets of a map being grown
	minTopHash     = 5
	loadFactorNum  = 13
	loadFactorDen  = 2
	hmapBucketsOff = 16
	bmapSize       = 272
)

type hmap struct {
	count      int
	flags      uint8
	B          uint8
	noverflow  uint16
	hash0      uint32
	buckets    unsafe.Pointer
	oldbuckets unsafe.Pointer
	nevacuate  uintptr
	extra      unsafe.Pointer
}

type bmap struct {
	tophash  [bucketCnt]uint8
	keys     [bucketCnt]string
	elems    [bucketCnt]string
	overflow *bmap
}

// keep holds every map built, as the runtime holds a goroutine's labels.
var keep []interface{}

// hash stands in for the runtime's seeded string hash (aeshash, not reproducible here): what
// matters to a reader is where the result puts a cell, which follows map.go: the low B bits
// choose the bucket, the top 8 bits (moved past the marks below minTopHash) are the tophash.
func hash(key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(key))
	return h.Sum64()
}

func tophash(h uint64) uint8 {
	top := uint8(h >> 56)
	if top < minTopHash {
		top += minTopHash
	}
	return top
}

// bucketShift gives the B that makemap picks for a hint of n (overLoadFactor).
func bucketShift(n int) uint8 {
	var b uint8
	for n > bucketCnt && uint64(n) > loadFactorNum*((uint64(1)<<b)/loadFactorDen) {
		b++
	}
	return b
}

// insert puts key=value into the first free cell of its bucket's chain, adding an overflow
// bucket when the chain is full, as mapassign does.
func insert(h *hmap, key, value string) {
	hv := hash(key)
	b := (*bmap)(unsafe.Add(h.buckets, uintptr(hv&(1<<h.B-1))*bmapSize))
	for {
		for i := 0; i < bucketCnt; i++ {
			if b.tophash[i] == emptyRest || b.tophash[i] == emptyOne {
				b.tophash[i] = tophash(hv)
				b.keys[i] = key
				b.elems[i] = value
				h.count++
				return
			}
		}
		if b.overflow == nil {
			b.overflow = new(bmap)
			h.noverflow++
		}
		b = b.overflow
	}
}

// newMap builds a map with room for @hint labels (B as makemap chooses) holding @kv (key,
// value, key, value...).
func newMap(hint int, kv ...string) *hmap {
	h := &hmap{B: bucketShift(hint), hash0: 0x5eed}
	buckets := make([]bmap, 1<<h.B)
	h.buckets = unsafe.Pointer(&buckets[0])
	for i := 0; i < len(kv); i += 2 {
		insert(h, kv[i], kv[i+1])
	}
	return h
}

// deleteKey empties the cell of @key as mapdelete does when cells follow it (emptyOne).
func deleteKey(h *hmap, key string) {
	hv := hash(key)
	for b := (*bmap)(unsafe.Add(h.buckets, uintptr(hv&(1<<h.B-1))*bmapSize)); b != nil; b = b.overflow {
		for i := 0; i < bucketCnt; i++ {
			if b.tophash[i] >= minTopHash && b.keys[i] == key {
				b.keys[i], b.elems[i] = "", ""
				b.tophash[i] = emptyOne
				h.count--
				return
			}
		}
	}
	panic("no such key: " + key)
}

// collide returns @n keys "PREFIX.N" that fall into bucket @bucket of a map with 2^@b buckets.
func collide(prefix string, b uint8, bucket uint64, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		k := prefix + "." + strconv.Itoa(i)
		if hash(k)&(1<<b-1) == bucket {
			out = append(out, k)
		}
	}
	return out
}

// labelsOf lists the map's labels as its cells hold them ("KEY=VALUE", sorted).
func labelsOf(h *hmap) []string {
	var out []string
	for i := 0; i < 1<<h.B; i++ {
		for b := (*bmap)(unsafe.Add(h.buckets, uintptr(i)*bmapSize)); b != nil; b = b.overflow {
			for j := 0; j < bucketCnt; j++ {
				if b.tophash[j] >= minTopHash {
					out = append(out, b.keys[j]+"="+b.elems[j])
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

var sinks [8]uint64

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
func burnSmall(n int) uint64 { return spin(n) }

//go:noinline
func burnOverflow(n int) uint64 { return spin(n) ^ 1 }

//go:noinline
func burnMany(n int) uint64 { return spin(n) ^ 2 }

//go:noinline
func burnGrowing(n int) uint64 { return spin(n) ^ 3 }

//go:noinline
func burnHuge(n int) uint64 { return spin(n) ^ 4 }

//go:noinline
func burnGarbage(n int) uint64 { return spin(n) ^ 5 }

//go:noinline
func burnMiscount(n int) uint64 { return spin(n) ^ 6 }

type job struct {
	name string
	burn func(int) uint64
	m    *hmap
}

func jobs() []job {
	small := newMap(4, "span_id", "00f067aa0ba902b7", "trace_id",
		"4bf92f3577b34da6a3ce929d0e0e4736", "gone", "deleted", "span_name", "map-small")
	deleteKey(small, "gone")

	// 12 labels: B = 1, and 9 of them in bucket 0 (8 cells, then its overflow bucket).
	var kv []string
	for _, k := range append(collide("ov", 1, 0, 9), collide("ov", 1, 1, 3)...) {
		kv = append(kv, k, "value-of-"+k)
	}
	overflow := newMap(12, kv...)
	if overflow.B != 1 || overflow.noverflow != 1 {
		panic("the 12 labels did not take 2 buckets and an overflow bucket")
	}

	kv = nil
	for i := 0; i < 20; i++ {
		kv = append(kv, fmt.Sprintf("many%02d", i), fmt.Sprintf("v%02d", i))
	}
	many := newMap(20, kv...)

	// Being grown from 1 bucket to 2 (hashGrow, then evacuate() moving cells one bucket at a
	// time): oldbuckets set, the old bucket's moved cells marked evacuated.
	growing := newMap(9, "g1", "a", "g2", "b", "g3", "c")
	old := newMap(1, "g1", "a", "g2", "b", "g3", "c")
	ob := (*bmap)(old.buckets)
	ob.tophash[0] = evacuatedX
	growing.oldbuckets = old.buckets
	keep = append(keep, old)

	huge := newMap(400, "h1", "a", "h2", "b")

	garbage := newMap(3, "x1", "a", "x2", "b", "x3", "c")
	(*bmap)(garbage.buckets).tophash[1] = evacuatedX

	miscount := newMap(3, "m1", "a", "m2", "b", "m3", "c")
	miscount.count = 5

	return []job{
		{"main.burnSmall", burnSmall, small},
		{"main.burnOverflow", burnOverflow, overflow},
		{"main.burnMany", burnMany, many},
		{"main.burnGrowing", burnGrowing, growing},
		{"main.burnHuge", burnHuge, huge},
		{"main.burnGarbage", burnGarbage, garbage},
		{"main.burnMiscount", burnMiscount, miscount},
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: golabelsmap CPU_SECONDS")
		os.Exit(2)
	}
	limit, err := strconv.ParseFloat(os.Args[1], 64)
	if err != nil {
		panic(err)
	}
	var hm hmap
	var bm bmap
	if unsafe.Sizeof(hm) != 48 || unsafe.Offsetof(hm.B) != 9 ||
		unsafe.Offsetof(hm.buckets) != hmapBucketsOff || unsafe.Offsetof(hm.oldbuckets) != 24 ||
		unsafe.Sizeof(bm) != bmapSize || unsafe.Offsetof(bm.keys) != 8 ||
		unsafe.Offsetof(bm.elems) != 136 || unsafe.Offsetof(bm.overflow) != 264 {
		panic("not the amd64 layout of Go 1.18-1.23's hmap and bmap")
	}
	// A labelMap made the runtime/pprof way (kept in a context, never installed): the type is
	// then in the binary's DWARF, as in any program that sets labels.
	ctx := pprof.WithLabels(context.Background(), pprof.Labels("unused", "x"))
	if v, _ := pprof.Label(ctx, "unused"); v != "x" {
		panic("runtime/pprof labels")
	}
	js := jobs()
	for _, j := range js {
		keep = append(keep, j.m)
		fmt.Printf("labels %s %s\n", j.name, strings.Join(labelsOf(j.m), " "))
	}
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')

	var wg sync.WaitGroup
	for i, j := range js {
		wg.Add(1)
		go func(i int, j job) {
			defer wg.Done()
			// The labelMap variable: g.labels points to it, it points to the map's header.
			lm := new(*hmap)
			*lm = j.m
			setProfLabel(unsafe.Pointer(lm))
			for cpuSeconds() < limit {
				sinks[i] ^= j.burn(2_000_000)
			}
			setProfLabel(nil)
			runtime.KeepAlive(lm)
		}(i, j)
		runtime.Gosched()
	}
	wg.Wait()
}
