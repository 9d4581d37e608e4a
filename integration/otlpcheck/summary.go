package main

import (
	"encoding/hex"
	"fmt"
	"path"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// MessageSummary describes one decoded ExportProfilesServiceRequest / ProfilesData.
type MessageSummary struct {
	Dictionary       DictionarySummary `json:"dictionary"`
	ResourceProfiles []ResourceSummary `json:"resource_profiles"`
	Totals           Totals            `json:"totals"`
	Errors           []string          `json:"errors"`
	Warnings         []string          `json:"warnings"`
	Send             *SendResult       `json:"send,omitempty"`
}

// DictionarySummary gives the length of every dictionary table.
type DictionarySummary struct {
	Strings    int `json:"strings"`
	Mappings   int `json:"mappings"`
	Locations  int `json:"locations"`
	Functions  int `json:"functions"`
	Links      int `json:"links"`
	Attributes int `json:"attributes"`
	Stacks     int `json:"stacks"`
}

// Totals over the whole message.
type Totals struct {
	ResourceProfiles int   `json:"resource_profiles"`
	Profiles         int   `json:"profiles"`
	Samples          int   `json:"samples"`
	Events           int64 `json:"events"`
}

type ResourceSummary struct {
	Attributes map[string]any `json:"attributes"`
	SchemaURL  string         `json:"schema_url,omitempty"`
	Scopes     []ScopeSummary `json:"scopes"`
}

type ScopeSummary struct {
	Name       string           `json:"name"`
	Version    string           `json:"version"`
	Attributes map[string]any   `json:"attributes,omitempty"`
	SchemaURL  string           `json:"schema_url,omitempty"`
	Profiles   []ProfileSummary `json:"profiles"`
}

type ProfileSummary struct {
	SampleType   string         `json:"sample_type"` // "type:unit"
	PeriodType   string         `json:"period_type"` // "type:unit"
	Period       int64          `json:"period"`
	TimeUnixNano uint64         `json:"time_unix_nano"`
	DurationNano uint64         `json:"duration_nano"`
	ProfileID    string         `json:"profile_id,omitempty"`
	Attributes   map[string]any `json:"attributes,omitempty"`
	// Samples counts Sample messages; Events counts what they stand for: the number of
	// timestamps of a timestamps-only sample, else the sum of its values.
	Samples int   `json:"samples"`
	Events  int64 `json:"events"`
	// Stacks aggregates events per distinct stack (frames leaf first), most events first.
	Stacks []StackCount `json:"stacks"`
	// Links lists the distinct links that samples point to.
	Links         []LinkSummary   `json:"links"`
	SampleDetails []SampleSummary `json:"sample_details,omitempty"`
}

type StackCount struct {
	Frames []string `json:"frames"`
	Events int64    `json:"events"`
}

type LinkSummary struct {
	TraceID string `json:"trace_id"`
	SpanID  string `json:"span_id"`
	Events  int64  `json:"events,omitempty"`
}

type SampleSummary struct {
	StackIndex int32          `json:"stack_index"`
	Frames     []string       `json:"frames"` // leaf first
	FrameTypes []string       `json:"frame_types,omitempty"`
	Values     []int64        `json:"values,omitempty"`
	Timestamps []uint64       `json:"timestamps,omitempty"`
	Attributes map[string]any `json:"attributes,omitempty"`
	LinkIndex  int32          `json:"link_index,omitempty"`
	Link       *LinkSummary   `json:"link,omitempty"`
}

// checker collects findings with a location prefix.
type checker struct {
	errors, warnings []string
}

func (c *checker) errorf(format string, a ...any) {
	c.errors = append(c.errors, fmt.Sprintf(format, a...))
}

func (c *checker) warnf(format string, a ...any) {
	c.warnings = append(c.warnings, fmt.Sprintf(format, a...))
}

// dict wraps the dictionary with bounds-checked look-ups that report problems.
type dict struct {
	d pprofile.ProfilesDictionary
	c *checker
}

func (x *dict) str(i int32, where string) string {
	st := x.d.StringTable()
	if i < 0 || int(i) >= st.Len() {
		x.c.errorf("%s: string index %d out of range [0,%d)", where, i, st.Len())
		return fmt.Sprintf("<bad string %d>", i)
	}
	return st.At(int(i))
}

func (x *dict) inRange(kind string, i int32, n int, where string) bool {
	if i < 0 || int(i) >= n {
		x.c.errorf("%s: %s index %d out of range [0,%d)", where, kind, i, n)
		return false
	}
	return true
}

// attrs resolves attribute_indices into a map, flagging bad indices and duplicate keys.
func (x *dict) attrs(idx pcommon.Int32Slice, where string) map[string]any {
	if idx.Len() == 0 {
		return nil
	}
	m := make(map[string]any, idx.Len())
	at := x.d.AttributeTable()
	for i := 0; i < idx.Len(); i++ {
		ai := idx.At(i)
		if !x.inRange("attribute", ai, at.Len(), where) {
			continue
		}
		if ai == 0 {
			x.c.warnf("%s: attribute index 0 (the unset entry) listed", where)
			continue
		}
		kv := at.At(int(ai))
		key := x.str(kv.KeyStrindex(), fmt.Sprintf("%s: attribute_table[%d].key_strindex", where, ai))
		if _, dup := m[key]; dup {
			x.c.errorf("%s: duplicate attribute key %q", where, key)
		}
		m[key] = kv.Value().AsRaw()
	}
	return m
}

func valueType(x *dict, vt pprofile.ValueType, where string) string {
	return x.str(vt.TypeStrindex(), where+".type_strindex") + ":" + x.str(vt.UnitStrindex(), where+".unit_strindex")
}

func mapAttrs(m pcommon.Map, c *checker, where string) map[string]any {
	out := make(map[string]any, m.Len())
	m.Range(func(k string, v pcommon.Value) bool {
		if _, dup := out[k]; dup {
			c.errorf("%s: duplicate attribute key %q", where, k)
		}
		out[k] = v.AsRaw()
		return true
	})
	return out
}

func summarize(p pprofile.Profiles, o *options) MessageSummary {
	c := &checker{}
	d := p.Dictionary()
	x := &dict{d: d, c: c}
	s := MessageSummary{
		Dictionary: DictionarySummary{
			Strings:    d.StringTable().Len(),
			Mappings:   d.MappingTable().Len(),
			Locations:  d.LocationTable().Len(),
			Functions:  d.FunctionTable().Len(),
			Links:      d.LinkTable().Len(),
			Attributes: d.AttributeTable().Len(),
			Stacks:     d.StackTable().Len(),
		},
		ResourceProfiles: []ResourceSummary{},
	}
	checkDictionary(x)
	fr := newFrameResolver(x)

	rps := p.ResourceProfiles()
	s.Totals.ResourceProfiles = rps.Len()
	for ri := 0; ri < rps.Len(); ri++ {
		rp := rps.At(ri)
		rw := fmt.Sprintf("resource_profiles[%d]", ri)
		rs := ResourceSummary{
			Attributes: mapAttrs(rp.Resource().Attributes(), c, rw+".resource"),
			SchemaURL:  rp.SchemaUrl(),
			Scopes:     []ScopeSummary{},
		}
		sps := rp.ScopeProfiles()
		for si := 0; si < sps.Len(); si++ {
			sp := sps.At(si)
			sw := fmt.Sprintf("%s.scope_profiles[%d]", rw, si)
			ss := ScopeSummary{
				Name:      sp.Scope().Name(),
				Version:   sp.Scope().Version(),
				SchemaURL: sp.SchemaUrl(),
				Profiles:  []ProfileSummary{},
			}
			if sp.Scope().Attributes().Len() > 0 {
				ss.Attributes = mapAttrs(sp.Scope().Attributes(), c, sw+".scope")
			}
			profs := sp.Profiles()
			for pi := 0; pi < profs.Len(); pi++ {
				ps := summarizeProfile(x, fr, profs.At(pi), fmt.Sprintf("%s.profiles[%d]", sw, pi), o)
				s.Totals.Profiles++
				s.Totals.Samples += ps.Samples
				s.Totals.Events += ps.Events
				ss.Profiles = append(ss.Profiles, ps)
			}
			rs.Scopes = append(rs.Scopes, ss)
		}
		s.ResourceProfiles = append(s.ResourceProfiles, rs)
	}
	s.Errors = nonNil(c.errors)
	s.Warnings = nonNil(c.warnings)
	return s
}

func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}

func summarizeProfile(x *dict, fr *frameResolver, pr pprofile.Profile, where string, o *options) ProfileSummary {
	c := x.c
	ps := ProfileSummary{
		SampleType:   valueType(x, pr.SampleType(), where+".sample_type"),
		PeriodType:   valueType(x, pr.PeriodType(), where+".period_type"),
		Period:       pr.Period(),
		TimeUnixNano: uint64(pr.Time()),
		DurationNano: pr.DurationNano(),
		Attributes:   x.attrs(pr.AttributeIndices(), where+".attribute_indices"),
		Stacks:       []StackCount{},
		Links:        []LinkSummary{},
	}
	if !pr.ProfileID().IsEmpty() {
		id := pr.ProfileID()
		ps.ProfileID = hex.EncodeToString(id[:])
	}
	if pr.Time() == 0 {
		c.warnf("%s: time_unix_nano is 0", where)
	}
	if pr.DurationNano() == 0 && pr.Samples().Len() > 0 {
		c.warnf("%s: duration_nano is 0", where)
	}
	if pr.SampleType().TypeStrindex() == 0 {
		c.errorf("%s: sample_type has no type", where)
	}

	start := uint64(pr.Time())
	end := start + pr.DurationNano()
	stackEvents := map[int32]int64{}
	linkEvents := map[int32]int64{}
	type identity struct {
		stack, link int32
		attrs       string
	}
	seen := map[identity]int{}
	shapeWithValues := -1 // unknown; 0: timestamps only; 1: has values

	samples := pr.Samples()
	ps.Samples = samples.Len()
	for i := 0; i < samples.Len(); i++ {
		sm := samples.At(i)
		sw := fmt.Sprintf("%s.samples[%d]", where, i)
		nv, nt := sm.Values().Len(), sm.TimestampsUnixNano().Len()

		// Shape: values per sample_type (exactly one type per profile), timestamps optional.
		switch {
		case nv == 0 && nt == 0:
			c.errorf("%s: neither values nor timestamps", sw)
		case nv > 0 && nt > 0 && nv != nt:
			c.errorf("%s: %d values but %d timestamps", sw, nv, nt)
		}
		has := 0
		if nv > 0 {
			has = 1
		}
		if shapeWithValues == -1 {
			shapeWithValues = has
		} else if shapeWithValues != has {
			c.errorf("%s: inconsistent sample shape (some samples have values, some only timestamps)", sw)
		}
		for j := 0; j < nt; j++ {
			ts := sm.TimestampsUnixNano().At(j)
			if ts < start || (pr.DurationNano() > 0 && ts >= end) {
				c.errorf("%s: timestamp %d outside profile range [%d,%d)", sw, ts, start, end)
				break
			}
		}
		var events int64
		if nv > 0 {
			for j := 0; j < nv; j++ {
				if sm.Values().At(j) < 0 {
					c.warnf("%s: negative value %d", sw, sm.Values().At(j))
				}
				events += sm.Values().At(j)
			}
		} else {
			events = int64(nt)
		}
		ps.Events += events

		// References.
		si := sm.StackIndex()
		if x.inRange("stack", si, x.d.StackTable().Len(), sw+".stack_index") {
			stackEvents[si] += events
			if si == 0 {
				c.warnf("%s: stack_index 0 (empty stack)", sw)
			}
		}
		attrs := x.attrs(sm.AttributeIndices(), sw+".attribute_indices")
		li := sm.LinkIndex()
		if x.inRange("link", li, x.d.LinkTable().Len(), sw+".link_index") && li != 0 {
			linkEvents[li] += events
		}
		id := identity{stack: si, link: li, attrs: attrKey(sm.AttributeIndices())}
		if prev, dup := seen[id]; dup {
			c.warnf("%s: same {stack, attributes, link} as samples[%d] (should be merged)", sw, prev)
		} else {
			seen[id] = i
		}

		if o.details && (o.maxSamples == 0 || len(ps.SampleDetails) < o.maxSamples) {
			ss := SampleSummary{StackIndex: si, Attributes: attrs, LinkIndex: li}
			ss.Frames, ss.FrameTypes = fr.stack(si)
			if allEmpty(ss.FrameTypes) {
				ss.FrameTypes = nil
			}
			if nv > 0 {
				ss.Values = sm.Values().AsRaw()
			}
			if nt > 0 {
				ss.Timestamps = sm.TimestampsUnixNano().AsRaw()
			}
			if li > 0 && int(li) < x.d.LinkTable().Len() {
				l := linkSummary(x.d.LinkTable().At(int(li)))
				ss.Link = &l
			}
			ps.SampleDetails = append(ps.SampleDetails, ss)
		}
	}

	for si, ev := range stackEvents {
		frames, _ := fr.stack(si)
		ps.Stacks = append(ps.Stacks, StackCount{Frames: frames, Events: ev})
	}
	sort.Slice(ps.Stacks, func(i, j int) bool {
		if ps.Stacks[i].Events != ps.Stacks[j].Events {
			return ps.Stacks[i].Events > ps.Stacks[j].Events
		}
		return strings.Join(ps.Stacks[i].Frames, ";") < strings.Join(ps.Stacks[j].Frames, ";")
	})
	for li, ev := range linkEvents {
		l := linkSummary(x.d.LinkTable().At(int(li)))
		l.Events = ev
		ps.Links = append(ps.Links, l)
	}
	sort.Slice(ps.Links, func(i, j int) bool {
		if ps.Links[i].Events != ps.Links[j].Events {
			return ps.Links[i].Events > ps.Links[j].Events
		}
		return ps.Links[i].SpanID < ps.Links[j].SpanID
	})
	return ps
}

func allEmpty(v []string) bool {
	for _, s := range v {
		if s != "" {
			return false
		}
	}
	return true
}

func attrKey(idx pcommon.Int32Slice) string {
	v := idx.AsRaw()
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	return fmt.Sprint(v)
}

func linkSummary(l pprofile.Link) LinkSummary {
	t, s := l.TraceID(), l.SpanID()
	return LinkSummary{TraceID: hex.EncodeToString(t[:]), SpanID: hex.EncodeToString(s[:])}
}

// checkDictionary checks the [0]-is-zero rule, index bounds inside the dictionary and
// duplicate entries.
func checkDictionary(x *dict) {
	c, d := x.c, x.d
	st := d.StringTable()
	if st.Len() == 0 {
		c.errorf("dictionary.string_table is empty (entry 0 must be \"\")")
	} else if st.At(0) != "" {
		c.errorf("dictionary.string_table[0] is %q, must be \"\"", st.At(0))
	}
	strSeen := make(map[string]int, st.Len())
	for i := 0; i < st.Len(); i++ {
		if prev, dup := strSeen[st.At(i)]; dup {
			c.errorf("dictionary.string_table[%d] duplicates [%d] (%q)", i, prev, st.At(i))
		} else {
			strSeen[st.At(i)] = i
		}
	}

	type table struct {
		name string
		n    int
		zero func() bool
		key  func(i int) string
	}
	mt, lt, ft, kt, at, sk := d.MappingTable(), d.LocationTable(), d.FunctionTable(), d.LinkTable(), d.AttributeTable(), d.StackTable()
	tables := []table{
		{"mapping_table", mt.Len(), func() bool {
			m := mt.At(0)
			return m.MemoryStart() == 0 && m.MemoryLimit() == 0 && m.FileOffset() == 0 && m.FilenameStrindex() == 0 && m.AttributeIndices().Len() == 0
		}, func(i int) string {
			m := mt.At(i)
			return fmt.Sprint(m.MemoryStart(), m.MemoryLimit(), m.FileOffset(), m.FilenameStrindex(), m.AttributeIndices().AsRaw())
		}},
		{"location_table", lt.Len(), func() bool {
			l := lt.At(0)
			return l.MappingIndex() == 0 && l.Address() == 0 && l.Lines().Len() == 0 && l.AttributeIndices().Len() == 0
		}, func(i int) string {
			l := lt.At(i)
			var b strings.Builder
			fmt.Fprint(&b, l.MappingIndex(), l.Address(), l.AttributeIndices().AsRaw())
			for j := 0; j < l.Lines().Len(); j++ {
				ln := l.Lines().At(j)
				fmt.Fprint(&b, "|", ln.FunctionIndex(), ln.Line(), ln.Column())
			}
			return b.String()
		}},
		{"function_table", ft.Len(), func() bool {
			f := ft.At(0)
			return f.NameStrindex() == 0 && f.SystemNameStrindex() == 0 && f.FilenameStrindex() == 0 && f.StartLine() == 0
		}, func(i int) string {
			f := ft.At(i)
			return fmt.Sprint(f.NameStrindex(), f.SystemNameStrindex(), f.FilenameStrindex(), f.StartLine())
		}},
		{"link_table", kt.Len(), func() bool {
			return kt.At(0).TraceID().IsEmpty() && kt.At(0).SpanID().IsEmpty()
		}, func(i int) string {
			l := linkSummary(kt.At(i))
			return l.TraceID + l.SpanID
		}},
		{"attribute_table", at.Len(), func() bool {
			a := at.At(0)
			return a.KeyStrindex() == 0 && a.UnitStrindex() == 0 && a.Value().Type() == pcommon.ValueTypeEmpty
		}, func(i int) string {
			a := at.At(i)
			return fmt.Sprint(a.KeyStrindex(), a.UnitStrindex(), a.Value().Type(), a.Value().AsString())
		}},
		{"stack_table", sk.Len(), func() bool {
			return sk.At(0).LocationIndices().Len() == 0
		}, func(i int) string {
			return fmt.Sprint(sk.At(i).LocationIndices().AsRaw())
		}},
	}
	for _, t := range tables {
		if t.n == 0 {
			c.errorf("dictionary.%s is empty (entry 0 must exist and be the zero value)", t.name)
			continue
		}
		if !t.zero() {
			c.errorf("dictionary.%s[0] is not the zero value", t.name)
		}
		seen := make(map[string]int, t.n)
		for i := 1; i < t.n; i++ {
			k := t.key(i)
			if prev, dup := seen[k]; dup {
				c.warnf("dictionary.%s[%d] duplicates [%d]", t.name, i, prev)
			} else {
				seen[k] = i
			}
		}
	}

	for i := 0; i < mt.Len(); i++ {
		m := mt.At(i)
		w := fmt.Sprintf("dictionary.mapping_table[%d]", i)
		x.str(m.FilenameStrindex(), w+".filename_strindex")
		if m.MemoryLimit() < m.MemoryStart() {
			c.errorf("%s: memory_limit 0x%x below memory_start 0x%x", w, m.MemoryLimit(), m.MemoryStart())
		}
		x.attrs(m.AttributeIndices(), w+".attribute_indices")
	}
	for i := 0; i < lt.Len(); i++ {
		l := lt.At(i)
		w := fmt.Sprintf("dictionary.location_table[%d]", i)
		x.inRange("mapping", l.MappingIndex(), mt.Len(), w+".mapping_index")
		for j := 0; j < l.Lines().Len(); j++ {
			x.inRange("function", l.Lines().At(j).FunctionIndex(), ft.Len(), fmt.Sprintf("%s.lines[%d].function_index", w, j))
		}
		x.attrs(l.AttributeIndices(), w+".attribute_indices")
	}
	for i := 0; i < ft.Len(); i++ {
		f := ft.At(i)
		w := fmt.Sprintf("dictionary.function_table[%d]", i)
		x.str(f.NameStrindex(), w+".name_strindex")
		x.str(f.SystemNameStrindex(), w+".system_name_strindex")
		x.str(f.FilenameStrindex(), w+".filename_strindex")
	}
	for i := 1; i < kt.Len(); i++ {
		l := kt.At(i)
		if l.TraceID().IsEmpty() || l.SpanID().IsEmpty() {
			c.errorf("dictionary.link_table[%d]: trace_id and span_id must both be non-zero", i)
		}
	}
	for i := 0; i < at.Len(); i++ {
		a := at.At(i)
		w := fmt.Sprintf("dictionary.attribute_table[%d]", i)
		x.str(a.KeyStrindex(), w+".key_strindex")
		x.str(a.UnitStrindex(), w+".unit_strindex")
		if i > 0 && a.KeyStrindex() == 0 {
			c.errorf("%s: empty key", w)
		}
	}
	for i := 0; i < sk.Len(); i++ {
		li := sk.At(i).LocationIndices()
		for j := 0; j < li.Len(); j++ {
			x.inRange("location", li.At(j), lt.Len(), fmt.Sprintf("dictionary.stack_table[%d].location_indices[%d]", i, j))
		}
	}
}

// frameResolver turns stacks into printable frames, leaf first. A location with several
// lines (inlining) yields several frames, innermost first.
type frameResolver struct {
	x     *dict
	cache map[int32][2][]string
}

func newFrameResolver(x *dict) *frameResolver {
	return &frameResolver{x: x, cache: map[int32][2][]string{}}
}

func (fr *frameResolver) stack(si int32) ([]string, []string) {
	if v, ok := fr.cache[si]; ok {
		return v[0], v[1]
	}
	d := fr.x.d
	frames, types := []string{}, []string{}
	if si >= 0 && int(si) < d.StackTable().Len() {
		li := d.StackTable().At(int(si)).LocationIndices()
		for j := 0; j < li.Len(); j++ {
			idx := li.At(j)
			if idx < 0 || int(idx) >= d.LocationTable().Len() {
				frames = append(frames, fmt.Sprintf("<bad location %d>", idx))
				types = append(types, "")
				continue
			}
			loc := d.LocationTable().At(int(idx))
			ft := fr.frameType(loc)
			names := fr.locationNames(loc)
			for _, n := range names {
				frames = append(frames, n)
				types = append(types, ft)
			}
		}
	}
	fr.cache[si] = [2][]string{frames, types}
	return frames, types
}

func (fr *frameResolver) locationNames(loc pprofile.Location) []string {
	d := fr.x.d
	st := d.StringTable()
	strAt := func(i int32) string {
		if i <= 0 || int(i) >= st.Len() {
			return ""
		}
		return st.At(int(i))
	}
	var names []string
	for k := 0; k < loc.Lines().Len(); k++ {
		fi := loc.Lines().At(k).FunctionIndex()
		name := ""
		if fi > 0 && int(fi) < d.FunctionTable().Len() {
			f := d.FunctionTable().At(int(fi))
			name = strAt(f.NameStrindex())
			if name == "" {
				name = strAt(f.SystemNameStrindex())
			}
		}
		if name == "" {
			name = "<unknown function>"
		}
		names = append(names, name)
	}
	if len(names) > 0 {
		return names
	}
	// Unsymbolized: "[binary+0xoffset]" when the mapping is known, else "0xaddress".
	mi := loc.MappingIndex()
	if mi > 0 && int(mi) < d.MappingTable().Len() {
		m := d.MappingTable().At(int(mi))
		if file := strAt(m.FilenameStrindex()); file != "" {
			return []string{fmt.Sprintf("[%s+0x%x]", path.Base(file), loc.Address())}
		}
	}
	return []string{fmt.Sprintf("0x%x", loc.Address())}
}

func (fr *frameResolver) frameType(loc pprofile.Location) string {
	d := fr.x.d
	idx := loc.AttributeIndices()
	for i := 0; i < idx.Len(); i++ {
		ai := idx.At(i)
		if ai <= 0 || int(ai) >= d.AttributeTable().Len() {
			continue
		}
		kv := d.AttributeTable().At(int(ai))
		ks := kv.KeyStrindex()
		if ks > 0 && int(ks) < d.StringTable().Len() && d.StringTable().At(int(ks)) == "profile.frame.type" {
			return kv.Value().AsString()
		}
	}
	return ""
}
