package main

import (
	"encoding/binary"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

const t0 = 1_764_000_000_000_000_000

// validProfiles builds a small, valid CPU profile: two stacks, one linked sample.
func validProfiles() pprofile.Profiles {
	p := pprofile.NewProfiles()
	d := p.Dictionary()
	d.StringTable().Append("", "samples", "count", "cpu", "nanoseconds", "main", "work", "/bin/demo", "thread.name")
	d.MappingTable().AppendEmpty()
	m := d.MappingTable().AppendEmpty()
	m.SetMemoryStart(0x400000)
	m.SetMemoryLimit(0x500000)
	m.SetFilenameStrindex(7)
	d.FunctionTable().AppendEmpty()
	d.FunctionTable().AppendEmpty().SetNameStrindex(5)
	d.FunctionTable().AppendEmpty().SetNameStrindex(6)
	d.LocationTable().AppendEmpty()
	for i, fn := range []int32{1, 2} {
		l := d.LocationTable().AppendEmpty()
		l.SetMappingIndex(1)
		l.SetAddress(0x401000 + uint64(i)*0x100)
		l.Lines().AppendEmpty().SetFunctionIndex(fn)
	}
	unsym := d.LocationTable().AppendEmpty()
	unsym.SetMappingIndex(1)
	unsym.SetAddress(0x403abc)
	d.StackTable().AppendEmpty()
	d.StackTable().AppendEmpty().LocationIndices().Append(2, 1) // work <- main
	d.StackTable().AppendEmpty().LocationIndices().Append(3, 1) // [demo+0x403abc] <- main
	d.LinkTable().AppendEmpty()
	lk := d.LinkTable().AppendEmpty()
	lk.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	lk.SetSpanID(pcommon.SpanID{0xaa, 0xbb, 0xcc, 0xdd, 1, 2, 3, 4})
	d.AttributeTable().AppendEmpty()
	at := d.AttributeTable().AppendEmpty()
	at.SetKeyStrindex(8)
	at.Value().SetStr("worker-1")

	rp := p.ResourceProfiles().AppendEmpty()
	rp.Resource().Attributes().PutStr("service.name", "demo")
	rp.Resource().Attributes().PutInt("process.pid", 4242)
	sp := rp.ScopeProfiles().AppendEmpty()
	sp.Scope().SetName("spanprof")
	pr := sp.Profiles().AppendEmpty()
	pr.SampleType().SetTypeStrindex(1)
	pr.SampleType().SetUnitStrindex(2)
	pr.PeriodType().SetTypeStrindex(3)
	pr.PeriodType().SetUnitStrindex(4)
	pr.SetPeriod(50_000_000)
	pr.SetTime(pcommon.Timestamp(t0))
	pr.SetDurationNano(5_000_000_000)
	s := pr.Samples().AppendEmpty()
	s.SetStackIndex(1)
	s.SetLinkIndex(1)
	s.AttributeIndices().Append(1)
	s.TimestampsUnixNano().Append(t0+10, t0+20, t0+30)
	s = pr.Samples().AppendEmpty()
	s.SetStackIndex(2)
	s.TimestampsUnixNano().Append(t0 + 40)
	return p
}

func profileOf(p pprofile.Profiles) pprofile.Profile {
	return p.ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0)
}

func TestValidProfileSummary(t *testing.T) {
	s := summarize(validProfiles(), &options{details: true})
	if len(s.Errors) != 0 || len(s.Warnings) != 0 {
		t.Fatalf("errors %v warnings %v", s.Errors, s.Warnings)
	}
	ps := s.ResourceProfiles[0].Scopes[0].Profiles[0]
	if ps.SampleType != "samples:count" || ps.PeriodType != "cpu:nanoseconds" {
		t.Errorf("types %s %s", ps.SampleType, ps.PeriodType)
	}
	if ps.Samples != 2 || ps.Events != 4 || s.Totals.Events != 4 {
		t.Errorf("samples %d events %d", ps.Samples, ps.Events)
	}
	if got := strings.Join(ps.Stacks[0].Frames, ";"); got != "work;main" || ps.Stacks[0].Events != 3 {
		t.Errorf("top stack %q x%d", got, ps.Stacks[0].Events)
	}
	if got := strings.Join(ps.Stacks[1].Frames, ";"); got != "[demo+0x403abc];main" {
		t.Errorf("unsymbolized stack %q", got)
	}
	if len(ps.Links) != 1 || ps.Links[0].TraceID != "0102030405060708090a0b0c0d0e0f10" ||
		ps.Links[0].SpanID != "aabbccdd01020304" || ps.Links[0].Events != 3 {
		t.Errorf("links %+v", ps.Links)
	}
	if ps.SampleDetails[0].Attributes["thread.name"] != "worker-1" {
		t.Errorf("sample attributes %v", ps.SampleDetails[0].Attributes)
	}
	if s.ResourceProfiles[0].Attributes["process.pid"] != int64(4242) {
		t.Errorf("resource %v", s.ResourceProfiles[0].Attributes)
	}
}

func TestBinaryAndJSONRoundTrip(t *testing.T) {
	p := validProfiles()
	bin, err := (&pprofile.ProtoMarshaler{}).MarshalProfiles(p)
	if err != nil {
		t.Fatal(err)
	}
	js, err := (&pprofile.JSONMarshaler{}).MarshalProfiles(p)
	if err != nil {
		t.Fatal(err)
	}
	if f := detectFormat(js); f != "json" {
		t.Errorf("JSON detected as %s", f)
	}
	if f := detectFormat(bin); f != "proto" {
		t.Errorf("binary detected as %s", f)
	}
	stream := binary.BigEndian.AppendUint32(nil, uint32(len(bin)))
	stream = append(stream, bin...)
	for format, data := range map[string][]byte{
		"proto":        bin,
		"json":         append(append(js, '\n'), js...),
		"proto-stream": append(append([]byte{}, stream...), stream...),
	} {
		msgs, err := decode(format, data)
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		for _, m := range msgs {
			s := summarize(m, &options{})
			if len(s.Errors) != 0 || s.Totals.Events != 4 {
				t.Errorf("%s: errors %v events %d", format, s.Errors, s.Totals.Events)
			}
		}
	}
	if _, err := decode("proto-stream", stream[:len(stream)-1]); err == nil {
		t.Error("truncated proto-stream accepted")
	}
}

func TestValidationFindings(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(p pprofile.Profiles)
		want   string
	}{
		{"string0", func(p pprofile.Profiles) { p.Dictionary().StringTable().SetAt(0, "x") }, "string_table[0]"},
		{"dupstring", func(p pprofile.Profiles) { p.Dictionary().StringTable().Append("main") }, "duplicates"},
		{"link0", func(p pprofile.Profiles) {
			p.Dictionary().LinkTable().At(0).SetSpanID(pcommon.SpanID{1})
		}, "link_table[0] is not the zero value"},
		{"nolinktable", func(p pprofile.Profiles) {
			p.Dictionary().LinkTable().RemoveIf(func(pprofile.Link) bool { return true })
			profileOf(p).Samples().At(0).SetLinkIndex(0)
		}, "link_table is empty"},
		{"stackbounds", func(p pprofile.Profiles) { profileOf(p).Samples().At(0).SetStackIndex(9) }, "stack index 9 out of range"},
		{"locbounds", func(p pprofile.Profiles) { p.Dictionary().StackTable().At(1).LocationIndices().Append(77) }, "location index 77"},
		{"funcbounds", func(p pprofile.Profiles) {
			p.Dictionary().LocationTable().At(1).Lines().At(0).SetFunctionIndex(5)
		}, "function index 5"},
		{"timestamp", func(p pprofile.Profiles) { profileOf(p).Samples().At(1).TimestampsUnixNano().Append(t0 - 1) }, "outside profile range"},
		{"shape", func(p pprofile.Profiles) { profileOf(p).Samples().At(1).Values().Append(1, 2) }, "2 values but 1 timestamps"},
		{"mixed", func(p pprofile.Profiles) {
			s := profileOf(p).Samples().At(1)
			s.TimestampsUnixNano().FromRaw(nil)
			s.Values().Append(3)
		}, "inconsistent sample shape"},
		{"empty", func(p pprofile.Profiles) { profileOf(p).Samples().At(1).TimestampsUnixNano().FromRaw(nil) }, "neither values nor timestamps"},
		{"dupattr", func(p pprofile.Profiles) {
			d := p.Dictionary()
			a := d.AttributeTable().AppendEmpty()
			a.SetKeyStrindex(8)
			a.Value().SetStr("other")
			profileOf(p).Samples().At(0).AttributeIndices().Append(2)
		}, "duplicate attribute key \"thread.name\""},
		{"halflink", func(p pprofile.Profiles) { p.Dictionary().LinkTable().At(1).SetSpanID(pcommon.SpanID{}) }, "must both be non-zero"},
		{"notype", func(p pprofile.Profiles) { profileOf(p).SampleType().SetTypeStrindex(0) }, "sample_type has no type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := validProfiles()
			tc.mutate(p)
			s := summarize(p, &options{details: true})
			if !strings.Contains(strings.Join(s.Errors, "\n"), tc.want) {
				t.Errorf("want an error containing %q, got %v", tc.want, s.Errors)
			}
		})
	}
}

func TestDuplicateSampleIdentityWarns(t *testing.T) {
	p := validProfiles()
	s := profileOf(p).Samples().AppendEmpty()
	s.SetStackIndex(2)
	s.TimestampsUnixNano().Append(t0 + 50)
	sum := summarize(p, &options{})
	if len(sum.Errors) != 0 || !strings.Contains(strings.Join(sum.Warnings, "\n"), "should be merged") {
		t.Errorf("errors %v warnings %v", sum.Errors, sum.Warnings)
	}
}
