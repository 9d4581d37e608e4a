// SPDX-License-Identifier: Apache-2.0

package spanprofctx

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
)

// otelCtxMappings lists the OTEL_CTX mappings of this process as /proc/self/maps names them
// (start address, name), the way spanprof's reader finds them (exporter/spans/procctx.c).
func otelCtxMappings(t *testing.T) map[uintptr]string {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[uintptr]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			continue
		}
		name := strings.Join(fields[5:], " ")
		if !strings.HasPrefix(name, "/memfd:OTEL_CTX") && !strings.HasPrefix(name, "[anon:OTEL_CTX]") &&
			!strings.HasPrefix(name, "[anon_shmem:OTEL_CTX]") {
			continue
		}
		start, err := strconv.ParseUint(strings.Split(fields[0], "-")[0], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		out[uintptr(start)] = name
	}
	return out
}

// readContext reads the one OTEL_CTX mapping: header checks as the reader makes them, then
// the payload decoded into resource attributes rendered as strings (key -> value).
func readContext(t *testing.T) map[string]string {
	t.Helper()
	maps := otelCtxMappings(t)
	if len(maps) != 1 {
		t.Fatalf("OTEL_CTX mappings: %v", maps)
	}
	for start := range maps {
		hdr := unsafe.Slice((*byte)(unsafe.Pointer(start)), headerSize)
		if string(hdr[:8]) != "OTEL_CTX" {
			t.Fatalf("signature %q", hdr[:8])
		}
		if v := binary.LittleEndian.Uint32(hdr[8:]); v != 2 {
			t.Fatalf("version %d", v)
		}
		size := binary.LittleEndian.Uint32(hdr[12:])
		if binary.LittleEndian.Uint64(hdr[16:]) == 0 {
			t.Fatal("published_at_ns 0")
		}
		ptr := uintptr(binary.LittleEndian.Uint64(hdr[24:]))
		if size > MaxPayload {
			t.Fatalf("payload %d bytes", size)
		}
		return decodeProcessContext(t, unsafe.Slice((*byte)(unsafe.Pointer(ptr)), size))
	}
	return nil
}

// A protobuf reader written from the wire format (independent of the encoder).
type pb struct {
	t *testing.T
	b []byte
}

func (p *pb) varint() uint64 {
	var v uint64
	for i := 0; ; i++ {
		if len(p.b) == 0 || i > 9 {
			p.t.Fatal("truncated varint")
		}
		c := p.b[0]
		p.b = p.b[1:]
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v
		}
	}
}

// next returns field number, wire type and, for wire types 1 and 2, the bytes; for 0 the value.
func (p *pb) next() (int, int, []byte, uint64) {
	tag := p.varint()
	switch tag & 7 {
	case 0:
		return int(tag >> 3), 0, nil, p.varint()
	case 1:
		v := p.b[:8]
		p.b = p.b[8:]
		return int(tag >> 3), 1, v, 0
	case 2:
		n := p.varint()
		if n > uint64(len(p.b)) {
			p.t.Fatal("truncated field")
		}
		v := p.b[:n]
		p.b = p.b[n:]
		return int(tag >> 3), 2, v, 0
	}
	p.t.Fatalf("wire type %d", tag&7)
	return 0, 0, nil, 0
}

func renderAny(t *testing.T, b []byte) string {
	p := &pb{t, b}
	var out string
	for len(p.b) > 0 {
		f, _, v, n := p.next()
		switch f {
		case 1:
			out = string(v)
		case 2:
			out = strconv.FormatBool(n != 0)
		case 3:
			out = strconv.FormatInt(int64(n), 10)
		case 4:
			out = strconv.FormatFloat(math.Float64frombits(binary.LittleEndian.Uint64(v)), 'g', -1, 64)
		case 5:
			var elems []string
			a := &pb{t, v}
			for len(a.b) > 0 {
				if f, _, e, _ := a.next(); f == 1 {
					elems = append(elems, renderAny(t, e))
				}
			}
			out = "[" + strings.Join(elems, ",") + "]"
		default:
			t.Fatalf("AnyValue field %d", f)
		}
	}
	return out
}

func decodeProcessContext(t *testing.T, b []byte) map[string]string {
	out := map[string]string{}
	p := &pb{t, b}
	for len(p.b) > 0 {
		f, wt, v, _ := p.next()
		if f != 1 || wt != 2 {
			t.Fatalf("ProcessContext field %d type %d", f, wt)
		}
		r := &pb{t, v}
		for len(r.b) > 0 {
			f, _, kvb, _ := r.next()
			if f != 1 {
				t.Fatalf("Resource field %d", f)
			}
			kv := &pb{t, kvb}
			var key, val string
			for len(kv.b) > 0 {
				switch f, _, x, _ := kv.next(); f {
				case 1:
					key = string(x)
				case 2:
					val = renderAny(t, x)
				}
			}
			out[key] = val
		}
	}
	return out
}

func TestPayloadDecodes(t *testing.T) {
	attrs := []attribute.KeyValue{
		attribute.String("service.name", "go-shop"), attribute.Bool("b", true),
		attribute.Int64("i", -3), attribute.Float64("f", 0.25),
		attribute.StringSlice("ss", []string{"x", "y"}), attribute.Int64Slice("is", []int64{1, 300}),
	}
	got := decodeProcessContext(t, EncodeProcessContext(attrs))
	exp := map[string]string{"service.name": "go-shop", "b": "true", "i": "-3", "f": "0.25",
		"ss": "[x,y]", "is": "[1,300]"}
	if fmt.Sprint(got) != fmt.Sprint(exp) {
		t.Fatalf("decoded %v, want %v", got, exp)
	}
	if got := decodeProcessContext(t, EncodeProcessContext(nil)); len(got) != 0 {
		t.Fatalf("empty resource decoded as %v", got)
	}
}

func TestPublishUpdateGrowUnpublish(t *testing.T) {
	defer Unpublish()
	r1 := resource.NewSchemaless(attribute.String("service.name", "one"))
	if err := PublishResource(r1); err != nil {
		t.Fatal(err)
	}
	first := otelCtxMappings(t)
	if got := readContext(t)["service.name"]; got != "one" {
		t.Fatalf("service.name %q", got)
	}
	// A small change: same mapping, rewritten.
	if err := PublishResource(resource.NewSchemaless(attribute.String("service.name", "two"))); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(otelCtxMappings(t)) != fmt.Sprint(first) || readContext(t)["service.name"] != "two" {
		t.Fatalf("update: %v %v", otelCtxMappings(t), readContext(t))
	}
	// Outgrowing the page: a new mapping, the old one gone.
	big := resource.NewSchemaless(attribute.String("service.name", "three"),
		attribute.String("pad", strings.Repeat("p", 10000)))
	if err := PublishResource(big); err != nil {
		t.Fatal(err)
	}
	if ctx := readContext(t); ctx["service.name"] != "three" || len(ctx["pad"]) != 10000 {
		t.Fatalf("grown: %v", ctx["service.name"])
	}
	if err := PublishResource(resource.NewSchemaless(attribute.String("pad",
		strings.Repeat("p", MaxPayload)))); err != ErrTooBig {
		t.Fatalf("oversized: %v", err)
	}
	if err := Unpublish(); err != nil || len(otelCtxMappings(t)) != 0 {
		t.Fatalf("unpublish: %v %v", err, otelCtxMappings(t))
	}
}
