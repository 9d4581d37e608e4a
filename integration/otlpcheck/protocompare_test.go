package main

// TestProtoFilesMatchPinnedWireFormat compiles spanprof's otlp-proto/opentelemetry/**.proto
// with protoc and compares every message, field and the Export rpc with the descriptors
// embedded in the generated Go of the opentelemetry-proto release that the pinned pdata module
// is tested against (go.opentelemetry.io/proto/slim/otlp..., see go.mod). The "slim" builds
// rename the package to opentelemetry.proto.slim.*; everything else is the official schema.
//
// Skipped when protoc is not installed.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"

	_ "go.opentelemetry.io/proto/slim/otlp/collector/metrics/v1"
	_ "go.opentelemetry.io/proto/slim/otlp/collector/profiles/v1development"
	_ "go.opentelemetry.io/proto/slim/otlp/common/v1"
	_ "go.opentelemetry.io/proto/slim/otlp/metrics/v1"
	_ "go.opentelemetry.io/proto/slim/otlp/profiles/v1development"
	_ "go.opentelemetry.io/proto/slim/otlp/resource/v1"
)

var ourProtoFiles = []string{
	"opentelemetry/proto/common/v1/common.proto",
	"opentelemetry/proto/resource/v1/resource.proto",
	"opentelemetry/proto/profiles/v1development/profiles.proto",
	"opentelemetry/proto/collector/profiles/v1development/profiles_service.proto",
	"opentelemetry/proto/metrics/v1/metrics.proto",
	"opentelemetry/proto/collector/metrics/v1/metrics_service.proto",
}

const slimPrefix = "opentelemetry.proto.slim."

func officialName(slim string) string {
	return strings.Replace(strings.TrimPrefix(slim, "."), slimPrefix, "opentelemetry.proto.", 1)
}

func TestProtoFilesMatchPinnedWireFormat(t *testing.T) {
	protoc, err := exec.LookPath("protoc")
	if err != nil {
		t.Skip("protoc not installed")
	}
	dir := os.Getenv("OTLP_PROTO_DIR") // to check another copy; default: the repo's
	if dir == "" {
		dir = "../../otlp-proto"
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "set.pb")
	args := append([]string{"--proto_path=" + root, "--descriptor_set_out=" + out}, ourProtoFiles...)
	if b, err := exec.Command(protoc, args...).CombinedOutput(); err != nil {
		t.Fatalf("protoc: %v\n%s", err, b)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(raw, &set); err != nil {
		t.Fatal(err)
	}

	// Official full name -> descriptor, from the pinned release's generated Go.
	want := map[string]protoreflect.MessageDescriptor{}
	var wantServices []protoreflect.ServiceDescriptor
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if !strings.HasPrefix(string(fd.Package()), slimPrefix) {
			return true
		}
		var walk func(ms protoreflect.MessageDescriptors)
		walk = func(ms protoreflect.MessageDescriptors) {
			for i := 0; i < ms.Len(); i++ {
				want[officialName(string(ms.Get(i).FullName()))] = ms.Get(i)
				walk(ms.Get(i).Messages())
			}
		}
		walk(fd.Messages())
		for i := 0; i < fd.Services().Len(); i++ {
			wantServices = append(wantServices, fd.Services().Get(i))
		}
		return true
	})

	got := map[string]*descriptorpb.DescriptorProto{}
	var services []string
	for _, f := range set.File {
		var walk func(prefix string, ms []*descriptorpb.DescriptorProto)
		walk = func(prefix string, ms []*descriptorpb.DescriptorProto) {
			for _, m := range ms {
				got[prefix+"."+m.GetName()] = m
				walk(prefix+"."+m.GetName(), m.NestedType)
			}
		}
		walk(f.GetPackage(), f.MessageType)
		for _, s := range f.Service {
			for _, m := range s.Method {
				services = append(services, "/"+f.GetPackage()+"."+s.GetName()+"/"+m.GetName()+
					"("+strings.TrimPrefix(m.GetInputType(), ".")+") "+strings.TrimPrefix(m.GetOutputType(), "."))
			}
		}
	}

	// Every message we define must exist upstream with identical fields.
	var names []string
	for n := range got {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		w, ok := want[n]
		if !ok {
			t.Errorf("%s: not in the pinned release", n)
			continue
		}
		compareMessage(t, n, got[n], w)
	}
	// Every upstream message of the four packages we copy must be defined by us.
	for n := range want {
		if _, ok := got[n]; !ok && isCopiedPackage(n) {
			t.Errorf("%s: defined upstream but missing from otlp-proto", n)
		}
	}

	// The Export rpcs, as they appear in the gRPC path.
	wantRPCs := []string{
		"/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export" +
			"(opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest) " +
			"opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceResponse",
		"/opentelemetry.proto.collector.metrics.v1.MetricsService/Export" +
			"(opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest) " +
			"opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceResponse",
	}
	sort.Strings(services)
	sort.Strings(wantRPCs)
	if strings.Join(services, "\n") != strings.Join(wantRPCs, "\n") {
		t.Errorf("rpc: got %v, want %v", services, wantRPCs)
	}
	for _, svc := range []string{"opentelemetry.proto.collector.profiles.v1development.ProfilesService",
		"opentelemetry.proto.collector.metrics.v1.MetricsService"} {
		found := false
		for _, s := range wantServices {
			if officialName(string(s.FullName())) == svc && s.Methods().Len() == 1 &&
				s.Methods().Get(0).Name() == "Export" {
				found = true
			}
		}
		if !found {
			t.Errorf("pinned release has no %s.Export", svc)
		}
	}
	t.Logf("compared %d messages", len(got))
}

func isCopiedPackage(n string) bool {
	for _, p := range []string{
		"opentelemetry.proto.common.v1.",
		"opentelemetry.proto.resource.v1.",
		"opentelemetry.proto.profiles.v1development.",
		"opentelemetry.proto.collector.profiles.v1development.",
		"opentelemetry.proto.metrics.v1.",
		"opentelemetry.proto.collector.metrics.v1.",
	} {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// kindOf maps a protoreflect kind to the descriptor.proto type enum.
func kindOf(k protoreflect.Kind) descriptorpb.FieldDescriptorProto_Type {
	return descriptorpb.FieldDescriptorProto_Type(k)
}

func compareMessage(t *testing.T, name string, got *descriptorpb.DescriptorProto, want protoreflect.MessageDescriptor) {
	t.Helper()
	wf := want.Fields()
	if len(got.Field) != wf.Len() {
		t.Errorf("%s: %d fields, pinned release has %d", name, len(got.Field), wf.Len())
	}
	for _, f := range got.Field {
		w := wf.ByNumber(protoreflect.FieldNumber(f.GetNumber()))
		if w == nil {
			t.Errorf("%s.%s = %d: no such field number upstream", name, f.GetName(), f.GetNumber())
			continue
		}
		where := name + "." + f.GetName()
		if string(w.Name()) != f.GetName() {
			t.Errorf("%s = %d: upstream name is %s", where, f.GetNumber(), w.Name())
		}
		if kindOf(w.Kind()) != f.GetType() {
			t.Errorf("%s: type %v, upstream %v", where, f.GetType(), w.Kind())
		}
		if (w.Cardinality() == protoreflect.Repeated) != (f.GetLabel() == descriptorpb.FieldDescriptorProto_LABEL_REPEATED) {
			t.Errorf("%s: repeated mismatch", where)
		}
		gotPacked := f.GetLabel() == descriptorpb.FieldDescriptorProto_LABEL_REPEATED && isPackable(f.GetType()) &&
			(f.GetOptions() == nil || f.GetOptions().Packed == nil || f.GetOptions().GetPacked())
		if w.IsPacked() != gotPacked {
			t.Errorf("%s: packed %v, upstream %v", where, gotPacked, w.IsPacked())
		}

		if w.Message() != nil || w.Enum() != nil {
			var wt string
			if w.Message() != nil {
				wt = officialName(string(w.Message().FullName()))
			} else {
				wt = officialName(string(w.Enum().FullName()))
			}
			if gt := strings.TrimPrefix(f.GetTypeName(), "."); gt != wt {
				t.Errorf("%s: type %s, upstream %s", where, gt, wt)
			}
		}
		var wo, gotOneof string
		if o := w.ContainingOneof(); o != nil && !o.IsSynthetic() {
			wo = string(o.Name())
		}
		if f.OneofIndex != nil && !f.GetProto3Optional() && !spelledOptional(got, f) {
			gotOneof = got.OneofDecl[f.GetOneofIndex()].GetName()
		}
		if wo != gotOneof {
			t.Errorf("%s: oneof %q, upstream %q", where, gotOneof, wo)
		}
		if w.HasPresence() != (f.GetProto3Optional() || f.OneofIndex != nil || f.GetType() == descriptorpb.FieldDescriptorProto_TYPE_MESSAGE) &&
			w.Cardinality() != protoreflect.Repeated {
			t.Errorf("%s: field presence differs (proto3 optional?)", where)
		}
	}
	// Reserved numbers must match too, so that nobody reuses them by accident.
	var gr, wr []string
	for _, r := range got.ReservedRange {
		gr = append(gr, fmt.Sprintf("%d-%d", r.GetStart(), r.GetEnd()-1))
	}
	for i := 0; i < want.ReservedRanges().Len(); i++ {
		r := want.ReservedRanges().Get(i)
		wr = append(wr, fmt.Sprintf("%d-%d", r[0], r[1]-1))
	}
	if strings.Join(gr, ",") != strings.Join(wr, ",") {
		t.Errorf("%s: reserved %v, upstream %v", name, gr, wr)
	}
}

// spelledOptional: the field is the only member of a oneof named "_<field>", which is how
// otlp-proto/ writes a proto3 `optional` field for protoc-c (same wire format and presence).
func spelledOptional(m *descriptorpb.DescriptorProto, f *descriptorpb.FieldDescriptorProto) bool {
	if f.GetOneofIndex() < 0 || int(f.GetOneofIndex()) >= len(m.OneofDecl) ||
		m.OneofDecl[f.GetOneofIndex()].GetName() != "_"+f.GetName() {
		return false
	}
	for _, o := range m.Field {
		if o != f && o.OneofIndex != nil && o.GetOneofIndex() == f.GetOneofIndex() {
			return false
		}
	}
	return true
}

func isPackable(ty descriptorpb.FieldDescriptorProto_Type) bool {
	switch ty {
	case descriptorpb.FieldDescriptorProto_TYPE_STRING, descriptorpb.FieldDescriptorProto_TYPE_BYTES,
		descriptorpb.FieldDescriptorProto_TYPE_MESSAGE, descriptorpb.FieldDescriptorProto_TYPE_GROUP:
		return false
	}
	return true
}
