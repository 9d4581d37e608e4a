// Command otlpcheck decodes OTLP profiles independently of spanprof's C encoder and prints a
// JSON summary plus validation findings. Tests use it to check what the agent wrote or what
// the Collector received.
//
// It decodes with the Collector's own pdata module (same version as integration/collector),
// so "otlpcheck accepts it" means "the pinned Collector decodes it the same way".
//
// Usage:
//
//	otlpcheck [flags] FILE...        FILE "-" reads standard input
//
// Input formats (-format):
//
//	auto          '{' first: JSON lines, else one binary message (default)
//	proto         one binary ExportProfilesServiceRequest (same layout as ProfilesData)
//	json          OTLP/JSON, one ProfilesData per line (the file exporter's json format)
//	proto-stream  4-byte big-endian length + binary message, repeated (file exporter, proto)
//
// Exit status: 0 when everything decoded and no validation error was found, 1 when some
// validation error was found, 2 on usage, I/O or decode errors.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

type options struct {
	format     string
	details    bool
	maxSamples int
	send       string
	timeout    time.Duration
	compact    bool
}

// Output is the top-level JSON document.
type Output struct {
	OK       bool          `json:"ok"`
	Inputs   []InputResult `json:"inputs"`
	Errors   []string      `json:"errors"`
	Warnings []string      `json:"warnings"`
}

// InputResult is one input file.
type InputResult struct {
	File        string           `json:"file"`
	Format      string           `json:"format"`
	DecodeError string           `json:"decode_error,omitempty"`
	Messages    []MessageSummary `json:"messages"`
}

func main() {
	var o options
	flag.StringVar(&o.format, "format", "auto", "input format: auto, proto, json, proto-stream")
	flag.BoolVar(&o.details, "samples", true, "list every sample (stack, values, timestamps, attributes, link)")
	flag.IntVar(&o.maxSamples, "max-samples", 0, "list at most this many samples per profile (0: all)")
	flag.StringVar(&o.send, "send", "", "also export each decoded message over OTLP/gRPC to this host:port (plaintext; use loopback)")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Second, "timeout of each -send export")
	flag.BoolVar(&o.compact, "compact", false, "print compact JSON instead of indented")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: otlpcheck [flags] FILE...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	switch o.format {
	case "auto", "proto", "json", "proto-stream":
	default:
		fmt.Fprintf(os.Stderr, "otlpcheck: unknown -format %q\n", o.format)
		os.Exit(2)
	}

	var client pprofileotlp.GRPCClient
	if o.send != "" {
		conn, err := grpc.NewClient(o.send, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			fmt.Fprintf(os.Stderr, "otlpcheck: %v\n", err)
			os.Exit(2)
		}
		defer conn.Close()
		client = pprofileotlp.NewGRPCClient(conn)
	}

	out := Output{Errors: []string{}, Warnings: []string{}}
	hardFailure := false
	for _, name := range flag.Args() {
		res := checkFile(name, &o, client)
		if res.DecodeError != "" {
			hardFailure = true
			out.Errors = append(out.Errors, fmt.Sprintf("%s: %s", name, res.DecodeError))
		}
		for i, m := range res.Messages {
			for _, e := range m.Errors {
				out.Errors = append(out.Errors, fmt.Sprintf("%s#%d: %s", name, i, e))
			}
			for _, w := range m.Warnings {
				out.Warnings = append(out.Warnings, fmt.Sprintf("%s#%d: %s", name, i, w))
			}
			if m.Send != nil && m.Send.Error != "" {
				hardFailure = true
			}
		}
		out.Inputs = append(out.Inputs, res)
	}
	out.OK = len(out.Errors) == 0 && !hardFailure

	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if !o.compact {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "otlpcheck: %v\n", err)
		os.Exit(2)
	}
	switch {
	case hardFailure:
		os.Exit(2)
	case !out.OK:
		os.Exit(1)
	}
}

func readInput(name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(os.Stdin)
	}
	return os.ReadFile(name)
}

func detectFormat(data []byte) string {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return "json"
	}
	return "proto"
}

func checkFile(name string, o *options, client pprofileotlp.GRPCClient) InputResult {
	res := InputResult{File: name, Format: o.format, Messages: []MessageSummary{}}
	data, err := readInput(name)
	if err != nil {
		res.DecodeError = err.Error()
		return res
	}
	if res.Format == "auto" {
		res.Format = detectFormat(data)
	}
	msgs, err := decode(res.Format, data)
	for _, p := range msgs {
		s := summarize(p, o)
		if client != nil {
			s.Send = send(client, p, o.timeout)
		}
		res.Messages = append(res.Messages, s)
	}
	if err != nil {
		res.DecodeError = err.Error()
	}
	return res
}

// decode returns every message it could decode, and the first error.
func decode(format string, data []byte) ([]pprofile.Profiles, error) {
	var msgs []pprofile.Profiles
	switch format {
	case "proto":
		p, err := (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(data)
		if err != nil {
			return nil, fmt.Errorf("binary decode: %w", err)
		}
		return append(msgs, p), nil
	case "json":
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
		line := 0
		for sc.Scan() {
			line++
			b := bytes.TrimSpace(sc.Bytes())
			if len(b) == 0 {
				continue
			}
			p, err := (&pprofile.JSONUnmarshaler{}).UnmarshalProfiles(b)
			if err != nil {
				return msgs, fmt.Errorf("JSON decode, line %d: %w", line, err)
			}
			msgs = append(msgs, p)
		}
		if err := sc.Err(); err != nil {
			return msgs, fmt.Errorf("JSON read: %w", err)
		}
		return msgs, nil
	case "proto-stream":
		for off, n := 0, 0; off < len(data); n++ {
			if len(data)-off < 4 {
				return msgs, fmt.Errorf("proto-stream message %d: truncated length prefix", n)
			}
			l := int(binary.BigEndian.Uint32(data[off:]))
			off += 4
			if l > len(data)-off {
				return msgs, fmt.Errorf("proto-stream message %d: length %d exceeds remaining %d bytes", n, l, len(data)-off)
			}
			p, err := (&pprofile.ProtoUnmarshaler{}).UnmarshalProfiles(data[off : off+l])
			if err != nil {
				return msgs, fmt.Errorf("proto-stream message %d: binary decode: %w", n, err)
			}
			msgs = append(msgs, p)
			off += l
		}
		return msgs, nil
	}
	return nil, errors.New("unknown format " + format)
}

// SendResult is the outcome of re-exporting one message with -send.
type SendResult struct {
	Endpoint         string `json:"endpoint"`
	Error            string `json:"error,omitempty"`
	RejectedProfiles int64  `json:"rejected_profiles"`
	ErrorMessage     string `json:"error_message,omitempty"`
}

func send(client pprofileotlp.GRPCClient, p pprofile.Profiles, timeout time.Duration) *SendResult {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	r := &SendResult{Endpoint: flag.Lookup("send").Value.String()}
	resp, err := client.Export(ctx, pprofileotlp.NewExportRequestFromProfiles(p))
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.RejectedProfiles = resp.PartialSuccess().RejectedProfiles()
	r.ErrorMessage = resp.PartialSuccess().ErrorMessage()
	return r
}
