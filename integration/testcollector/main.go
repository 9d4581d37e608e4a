// Command testcollector is a minimal OTLP/gRPC profiles receiver for spanprof's fault tests.
// It decodes each Export request with the Collector's pdata module and appends one JSON line
// per request to -out: the profile ids, sample counts and time windows it carried. It can
// misbehave on purpose: answer slower than the client's deadline (-delay, during the first
// -slow-for of its life), fail the first -fail-first calls with UNAVAILABLE, or refuse every
// request holding a Profile of sample type -refuse-type (e.g. off_cpu) with INVALID_ARGUMENT,
// not retryable, as Grafana Pyroscope refuses the off-CPU profiles it cannot convert; refused
// requests are recorded with "refused": true.
// It listens on loopback only.
package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // accept gzip-compressed requests
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

type record struct {
	ReceivedUnixNano int64             `json:"received_unix_nano"`
	Refused          bool              `json:"refused,omitempty"`
	Profiles         []profileSummary  `json:"profiles"`
	Headers          map[string]string `json:"headers,omitempty"`
}

type profileSummary struct {
	ProfileID    string `json:"profile_id"`
	PID          int64  `json:"pid"`
	SampleType   string `json:"sample_type"` // its type string, e.g. "samples", "off_cpu"
	Samples      int64  `json:"samples"`     // sum of events: timestamps, else values
	TimeUnixNano uint64 `json:"time_unix_nano"`
	DurationNano uint64 `json:"duration_nano"`
}

type server struct {
	pprofileotlp.UnimplementedGRPCServer
	start     time.Time
	delay     time.Duration
	slowFor   time.Duration
	failFirst int
	headers   bool
	refuse    string
	calls     int
	mu        sync.Mutex
	out       *os.File
}

func (s *server) Export(ctx context.Context, req pprofileotlp.ExportRequest) (pprofileotlp.ExportResponse, error) {
	s.mu.Lock()
	s.calls++
	call := s.calls
	s.mu.Unlock()
	if call <= s.failFirst {
		return pprofileotlp.NewExportResponse(), status.Error(codes.Unavailable, "testcollector: failing on purpose")
	}
	if s.delay > 0 && time.Since(s.start) < s.slowFor {
		select {
		case <-time.After(s.delay):
		case <-ctx.Done():
			// The client gave up; this request is not recorded.
			return pprofileotlp.NewExportResponse(), status.Error(codes.DeadlineExceeded, "client gone")
		}
	}
	p := req.Profiles()
	strs := p.Dictionary().StringTable()
	rec := record{ReceivedUnixNano: time.Now().UnixNano()}
	if md, ok := metadata.FromIncomingContext(ctx); ok && s.headers {
		rec.Headers = map[string]string{}
		for k, v := range md {
			if strings.HasPrefix(k, "x-") && len(v) > 0 {
				rec.Headers[k] = v[0]
			}
		}
	}
	rps := p.ResourceProfiles()
	for i := 0; i < rps.Len(); i++ {
		rp := rps.At(i)
		var pid int64
		if v, ok := rp.Resource().Attributes().Get("process.pid"); ok {
			pid = v.Int()
		}
		sps := rp.ScopeProfiles()
		for j := 0; j < sps.Len(); j++ {
			profs := sps.At(j).Profiles()
			for k := 0; k < profs.Len(); k++ {
				pr := profs.At(k)
				id := pr.ProfileID()
				ps := profileSummary{ProfileID: hex.EncodeToString(id[:]), PID: pid,
					TimeUnixNano: uint64(pr.Time()), DurationNano: pr.DurationNano()}
				if ti := int(pr.SampleType().TypeStrindex()); ti > 0 && ti < strs.Len() {
					ps.SampleType = strs.At(ti)
				}
				if s.refuse != "" && ps.SampleType == s.refuse {
					rec.Refused = true
				}
				ss := pr.Samples()
				for n := 0; n < ss.Len(); n++ {
					smp := ss.At(n)
					if smp.TimestampsUnixNano().Len() > 0 {
						ps.Samples += int64(smp.TimestampsUnixNano().Len())
					} else if smp.Values().Len() > 0 {
						ps.Samples += smp.Values().At(0)
					}
				}
				rec.Profiles = append(rec.Profiles, ps)
			}
		}
	}
	line, _ := json.Marshal(rec)
	s.mu.Lock()
	s.out.Write(append(line, '\n'))
	s.out.Sync()
	s.mu.Unlock()
	if rec.Refused {
		return pprofileotlp.NewExportResponse(), status.Errorf(codes.InvalidArgument,
			"testcollector: refusing sample type %s on purpose", s.refuse)
	}
	return pprofileotlp.NewExportResponse(), nil
}

func main() {
	listen := flag.String("listen", "127.0.0.1:4317", "loopback address to listen on")
	out := flag.String("out", "", "append one JSON line per accepted request here (required)")
	delay := flag.Duration("delay", 0, "answer each call after this long")
	slowFor := flag.Duration("slow-for", 24*time.Hour, "only delay calls during this long after start")
	failFirst := flag.Int("fail-first", 0, "fail this many first calls with UNAVAILABLE")
	headers := flag.Bool("record-headers", false, "record the x-* metadata of each call")
	refuse := flag.String("refuse-type", "", "refuse (INVALID_ARGUMENT) every request holding a Profile of this sample type")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "testcollector: -out is required")
		os.Exit(2)
	}
	host := strings.Split(*listen, ":")[0]
	if host != "127.0.0.1" && host != "localhost" && host != "[::1]" {
		fmt.Fprintln(os.Stderr, "testcollector: listens on loopback only")
		os.Exit(2)
	}
	f, err := os.OpenFile(*out, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(64 << 20))
	pprofileotlp.RegisterGRPCServer(gs, &server{start: time.Now(), delay: *delay, slowFor: *slowFor,
		failFirst: *failFirst, headers: *headers, refuse: *refuse, out: f})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() { <-sig; gs.Stop() }()
	fmt.Fprintf(os.Stderr, "testcollector: listening on %s\n", lis.Addr())
	if err := gs.Serve(lis); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	f.Close()
}
