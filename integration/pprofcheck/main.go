// pprofcheck decodes a pprof profile (gzipped or not) with the reference Go
// implementation and prints it as JSON, so that the integration tests check
// spanprof's pprof output with a decoder that is not spanprof's own.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/google/pprof/profile"
)

type line struct {
	Function   string `json:"function"`
	SystemName string `json:"system_name"`
	File       string `json:"file"`
	Line       int64  `json:"line"`
}

type location struct {
	Address uint64 `json:"address"`
	Mapping string `json:"mapping"`
	BuildID string `json:"build_id"`
	Lines   []line `json:"lines"` // innermost first
}

type sample struct {
	Values    []int64             `json:"values"`
	Labels    map[string][]string `json:"labels"`
	NumLabels map[string][]int64  `json:"num_labels"`
	Stack     []location          `json:"stack"` // leaf first
}

type mapping struct {
	Start, Limit, Offset uint64
	File, BuildID        string
}

type out struct {
	SampleTypes   []string  `json:"sample_types"`
	PeriodType    string    `json:"period_type"`
	Period        int64     `json:"period"`
	TimeNanos     int64     `json:"time_nanos"`
	DurationNanos int64     `json:"duration_nanos"`
	Mappings      []mapping `json:"mappings"`
	Samples       []sample  `json:"samples"`
	CheckError    string    `json:"check_error"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: pprofcheck PROFILE")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "parse:", err)
		os.Exit(1)
	}
	o := out{Period: p.Period, TimeNanos: p.TimeNanos, DurationNanos: p.DurationNanos}
	if err := p.CheckValid(); err != nil {
		o.CheckError = err.Error()
	}
	for _, st := range p.SampleType {
		o.SampleTypes = append(o.SampleTypes, st.Type+"/"+st.Unit)
	}
	if p.PeriodType != nil {
		o.PeriodType = p.PeriodType.Type + "/" + p.PeriodType.Unit
	}
	for _, m := range p.Mapping {
		o.Mappings = append(o.Mappings, mapping{m.Start, m.Limit, m.Offset, m.File, m.BuildID})
	}
	for _, s := range p.Sample {
		js := sample{Values: s.Value, Labels: s.Label, NumLabels: s.NumLabel}
		for _, l := range s.Location {
			jl := location{Address: l.Address}
			if l.Mapping != nil {
				jl.Mapping = l.Mapping.File
				jl.BuildID = l.Mapping.BuildID
			}
			for _, ln := range l.Line {
				x := line{Line: ln.Line}
				if ln.Function != nil {
					x.Function = ln.Function.Name
					x.SystemName = ln.Function.SystemName
					x.File = ln.Function.Filename
				}
				jl.Lines = append(jl.Lines, x)
			}
			js.Stack = append(js.Stack, jl)
		}
		o.Samples = append(o.Samples, js)
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
