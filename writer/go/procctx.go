// SPDX-License-Identifier: Apache-2.0

package spanprofctx

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	"golang.org/x/sys/unix"
)

// The OTEP 4719 process context: a mapping named OTEL_CTX whose 32-byte header (host endian)
//
//	signature [8]byte "OTEL_CTX" | version uint32 (2) | payload_size uint32 |
//	published_at_ns uint64 (0 while an update is in progress) | payload uint64 (a pointer)
//
// points to a protobuf opentelemetry.proto.processcontext.v1development.ProcessContext
// {Resource resource = 1; repeated KeyValue attributes = 2}. spanprof's reader
// (exporter/spans/procctx.c) finds the mapping by its name in /proc/PID/maps ("/memfd:OTEL_CTX",
// "[anon:OTEL_CTX]" or "[anon_shmem:OTEL_CTX]"), checks signature and version, reads the
// payload (at most 64 KiB) and reads the header again: a changed or zero published_at_ns is
// an update in progress, read again (at most 3 times).
const (
	headerSize     = 32
	processVersion = 2
	// MaxPayload is the largest payload readers accept (bytes): spanprof's
	// PROCCTX_MAX_PAYLOAD.
	MaxPayload = 64 * 1024
)

// ErrTooBig is returned by PublishResource for a resource whose payload is over MaxPayload.
var ErrTooBig = errors.New("spanprofctx: process context payload over 64 KiB")

var proc struct {
	mu       sync.Mutex
	mem      []byte // the mapping; nil while nothing is published
	lastNs   uint64
	resource atomic.Pointer[resource.Resource] // the one published, to skip republishing
}

// PublishResource publishes @res (its attributes: service.name, ...) as this process's OTEP
// 4719 process context, replacing an earlier one: readers such as spanprof then label the
// process's profiles with the SDK's resource instead of unknown_service:<binary>. A nil @res
// unpublishes. Safe for concurrent use; a resource already published (the same pointer) costs
// an atomic load. Errors: ErrTooBig, or the mmap's. Attributes of types the payload does not
// carry (maps, byte slices, heterogeneous slices) are left out.
func PublishResource(res *resource.Resource) error {
	if res == nil {
		return Unpublish()
	}
	if proc.resource.Load() == res {
		return nil
	}
	payload := EncodeProcessContext(res.Attributes())
	if len(payload) > MaxPayload {
		return ErrTooBig
	}
	proc.mu.Lock()
	defer proc.mu.Unlock()
	if err := publishLocked(payload); err != nil {
		return err
	}
	proc.resource.Store(res)
	return nil
}

// Unpublish removes the process context (zeroes its timestamp and unmaps it). No error when
// nothing is published.
func Unpublish() error {
	proc.mu.Lock()
	defer proc.mu.Unlock()
	proc.resource.Store(nil)
	if proc.mem == nil {
		return nil
	}
	retire(proc.mem)
	proc.mem = nil
	return nil
}

func header(mem []byte) (sig *[8]byte, version, size *uint32, ns, ptr *uint64) {
	p := unsafe.Pointer(&mem[0])
	return (*[8]byte)(p), (*uint32)(unsafe.Add(p, 8)), (*uint32)(unsafe.Add(p, 12)),
		(*uint64)(unsafe.Add(p, 16)), (*uint64)(unsafe.Add(p, 24))
}

func nextTimestamp() uint64 {
	ns := uint64(time.Now().UnixNano())
	if ns <= proc.lastNs {
		ns = proc.lastNs + 1 // nonzero, and a reader always sees a change
	}
	proc.lastNs = ns
	return ns
}

func retire(mem []byte) {
	_, _, _, ns, _ := header(mem)
	atomic.StoreUint64(ns, 0)
	unix.Munmap(mem)
}

func publishLocked(payload []byte) error {
	if mem := proc.mem; mem != nil && headerSize+len(payload) <= len(mem) {
		// Update protocol: timestamp 0, rewrite, new timestamp (atomic stores order the
		// writes for readers on other CPUs).
		_, _, size, ns, ptr := header(mem)
		atomic.StoreUint64(ns, 0)
		copy(mem[headerSize:], payload)
		atomic.StoreUint32(size, uint32(len(payload)))
		atomic.StoreUint64(ptr, uint64(uintptr(unsafe.Pointer(&mem[headerSize]))))
		atomic.StoreUint64(ns, nextTimestamp())
		return nil
	}
	page := unix.Getpagesize()
	mem, err := mapContext((headerSize + len(payload) + page - 1) / page * page)
	if err != nil {
		return fmt.Errorf("spanprofctx: mapping the process context: %w", err)
	}
	sig, version, size, ns, ptr := header(mem)
	*version = processVersion
	*size = uint32(len(payload))
	*ptr = uint64(uintptr(unsafe.Pointer(&mem[headerSize])))
	copy(mem[headerSize:], payload)
	atomic.StoreUint64(ns, nextTimestamp())
	// The signature goes last: a reader that sees it sees a complete header and payload.
	var s [8]byte
	copy(s[:], "OTEL_CTX")
	atomic.StoreUint64((*uint64)(unsafe.Pointer(sig)), *(*uint64)(unsafe.Pointer(&s)))
	if proc.mem != nil {
		retire(proc.mem) // the payload outgrew it: the new one is complete
	}
	proc.mem = mem
	return nil
}

// mapContext maps @size bytes named OTEL_CTX: a memfd (/memfd:OTEL_CTX in /proc/PID/maps),
// else (memfd_create refused, e.g. by a seccomp policy) anonymous memory named with
// PR_SET_VMA_ANON_NAME ([anon:OTEL_CTX], Linux 5.17 with CONFIG_ANON_VMA_NAME). Go memory is
// never used: the garbage collector would not move it, but readers must find it by name.
func mapContext(size int) ([]byte, error) {
	var mem []byte
	fd, err := unix.MemfdCreate("OTEL_CTX", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_NOEXEC_SEAL)
	if err == unix.EINVAL { // before Linux 6.3
		fd, err = unix.MemfdCreate("OTEL_CTX", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err == nil {
		if unix.Ftruncate(fd, int64(size)) == nil {
			// Nobody may resize it under the readers (e.g. through /proc/PID/map_files).
			unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS,
				unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL)
			mem, err = unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		}
		unix.Close(fd)
	}
	if mem == nil {
		mem, err = unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE,
			unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return nil, err
		}
		name, _ := unix.BytePtrFromString("OTEL_CTX")
		if unix.Prctl(unix.PR_SET_VMA, unix.PR_SET_VMA_ANON_NAME,
			uintptr(unsafe.Pointer(&mem[0])), uintptr(size),
			uintptr(unsafe.Pointer(name))) != nil {
			unix.Munmap(mem)
			return nil, errors.New("neither memfd_create nor PR_SET_VMA_ANON_NAME works")
		}
	}
	unix.Madvise(mem, unix.MADV_DONTFORK) // a forked child does not publish the parent's
	return mem, nil
}

// ---- the payload, hand-encoded protobuf ----
//
// ProcessContext { 1 resource: Resource { 1 attributes: repeated KeyValue } }
// KeyValue { 1 key: string, 2 value: AnyValue }
// AnyValue { 1 string_value | 2 bool_value | 3 int_value | 4 double_value |
//            5 array_value: ArrayValue { 1 values: repeated AnyValue } }

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendBytes(b []byte, field int, s []byte) []byte {
	b = appendVarint(b, uint64(field)<<3|2)
	b = appendVarint(b, uint64(len(s)))
	return append(b, s...)
}

func anyValue(v attribute.Value) ([]byte, bool) {
	var b []byte
	switch v.Type() {
	case attribute.STRING:
		return appendBytes(b, 1, []byte(v.AsString())), true
	case attribute.BOOL:
		x := uint64(0)
		if v.AsBool() {
			x = 1
		}
		return appendVarint(append(b, 2<<3|0), x), true
	case attribute.INT64:
		return appendVarint(append(b, 3<<3|0), uint64(v.AsInt64())), true
	case attribute.FLOAT64:
		x := math.Float64bits(v.AsFloat64())
		b = append(b, 4<<3|1)
		for i := 0; i < 8; i++ {
			b = append(b, byte(x>>(8*i)))
		}
		return b, true
	}
	var elems []attribute.Value
	switch v.Type() {
	case attribute.STRINGSLICE:
		for _, s := range v.AsStringSlice() {
			elems = append(elems, attribute.StringValue(s))
		}
	case attribute.BOOLSLICE:
		for _, s := range v.AsBoolSlice() {
			elems = append(elems, attribute.BoolValue(s))
		}
	case attribute.INT64SLICE:
		for _, s := range v.AsInt64Slice() {
			elems = append(elems, attribute.Int64Value(s))
		}
	case attribute.FLOAT64SLICE:
		for _, s := range v.AsFloat64Slice() {
			elems = append(elems, attribute.Float64Value(s))
		}
	default:
		return nil, false // maps, bytes, mixed slices, empty: not carried
	}
	var arr []byte
	for _, e := range elems {
		ev, _ := anyValue(e)
		arr = appendBytes(arr, 1, ev)
	}
	return appendBytes(b, 5, arr), true
}

// EncodeProcessContext returns the protobuf ProcessContext payload carrying @attrs as its
// resource's attributes (in order; attributes whose type the payload does not carry are left
// out). Exported for tests and for programs that publish by other means.
func EncodeProcessContext(attrs []attribute.KeyValue) []byte {
	var res []byte
	for _, kv := range attrs {
		v, ok := anyValue(kv.Value)
		if !ok {
			continue
		}
		var k []byte
		k = appendBytes(k, 1, []byte(kv.Key))
		k = appendBytes(k, 2, v)
		res = appendBytes(res, 1, k)
	}
	return appendBytes(nil, 1, res)
}
