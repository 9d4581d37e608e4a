// Command otelcol-spanprof is the OpenTelemetry Collector that spanprof's integration tests run.
//
// It is a plain Collector distribution with only the components the tests need:
//
//	receivers:  otlp
//	processors: batch, memory_limiter (what collector-config/deploy/ names)
//	exporters:  debug, otlp_grpc (alias otlp), otlp_http (alias otlphttp), file (contrib)
//
// Every module is pinned in go.mod at one Collector release (see docs/collector.md).
// The profiles signal is behind the `service.profilesSupport` feature gate; this binary
// turns it on by default so that a forgotten flag cannot make a test pass vacuously.
// `--feature-gates=service.profilesSupport` is still accepted (and `-service.profilesSupport`
// turns it off again).
package main

import (
	"fmt"
	"os"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/envprovider"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/confmap/provider/yamlprovider"
	"go.opentelemetry.io/collector/exporter/debugexporter"
	"go.opentelemetry.io/collector/exporter/otlpexporter"
	"go.opentelemetry.io/collector/exporter/otlphttpexporter"
	"go.opentelemetry.io/collector/featuregate"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/processor/batchprocessor"
	"go.opentelemetry.io/collector/processor/memorylimiterprocessor"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

// collectorVersion is the Collector release every go.opentelemetry.io/collector module is
// pinned to in go.mod; keep the two in step.
const collectorVersion = "0.165.0"

const profilesGate = "service.profilesSupport"

func factories() (otelcol.Factories, error) {
	var f otelcol.Factories
	var err error
	if f.Receivers, err = otelcol.MakeFactoryMap(otlpreceiver.NewFactory()); err != nil {
		return f, err
	}
	if f.Processors, err = otelcol.MakeFactoryMap(
		batchprocessor.NewFactory(),
		memorylimiterprocessor.NewFactory(),
	); err != nil {
		return f, err
	}
	if f.Exporters, err = otelcol.MakeFactoryMap(
		debugexporter.NewFactory(),
		otlpexporter.NewFactory(),
		otlphttpexporter.NewFactory(),
		fileexporter.NewFactory(),
	); err != nil {
		return f, err
	}
	f.Telemetry = otelconftelemetry.NewFactory()
	return f, nil
}

func main() {
	// Default on; the --feature-gates flag is parsed later and can still override it.
	if err := featuregate.GlobalRegistry().Set(profilesGate, true); err != nil {
		fmt.Fprintf(os.Stderr, "otelcol-spanprof: cannot enable %s: %v\n", profilesGate, err)
		os.Exit(1)
	}

	settings := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{
			Command:     "otelcol-spanprof",
			Description: "OpenTelemetry Collector for spanprof integration tests",
			Version:     collectorVersion,
		},
		Factories: factories,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{
					fileprovider.NewFactory(),
					envprovider.NewFactory(),
					yamlprovider.NewFactory(),
				},
				DefaultScheme: "env",
			},
		},
	}

	if err := otelcol.NewCommand(settings).Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "otelcol-spanprof: %v\n", err)
		os.Exit(1)
	}
}
