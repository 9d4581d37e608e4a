# bench/export: bytes on the wire per sample at steady state (OTLP raw and gzipped as gRPC
# compresses) and encode time per export interval, against the pprof encoding of the same
# synthetic samples in the same run. Prints ratios; never fails on the figures. See
# docs/performance.md ("Export").
#   make bench-export [BUILD=dir] [BENCH_EXPORT_ARGS="--only 2"]
#   BENCH_EXPORT_ARGS=--real (root) also runs $(BUILD)/spanprof against integration/testcollector
#   with --compression gzip and none (builds both first).

BENCH_EXPORT_ARGS ?=
EXPORT_BENCH_PB_O := $(filter $(OBJ)/gen/opentelemetry/%,$(PROTO_O)) $(OBJ)/gen/pprof/profile.pb-c.o

$(BUILD)/bench/export: bench/otlp/export.c exporter/otlp/otlp_encode.h exporter/output/pprof.h exporter/profile/profile.h \
		exporter/process/procmeta.h $(OBJ)/otlp/otlp_encode.o $(OBJ)/otlp/htlhash.o $(OBJ)/util/regfile.o $(OBJ)/output/pprof.o $(OBJ)/profile/profile.o \
		$(OBJ)/process/procmeta.o $(EXPORT_BENCH_PB_O) $(PROTO_H)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(filter %.c %.o,$^) $(LDLIBS) -o $@

$(BUILD)/testcollector: $(wildcard integration/testcollector/*.go integration/testcollector/go.*)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd integration/testcollector && go build -o $(abspath $@) .

.PHONY: bench-export
bench: bench-export

bench-export: $(BUILD)/bench/export $(if $(filter --real,$(BENCH_EXPORT_ARGS)),$(BUILD)/spanprof $(BUILD)/testcollector)
	$(Q)$(BUILD)/bench/export $(BENCH_EXPORT_ARGS)
