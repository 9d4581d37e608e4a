# bench/view: `spanprof view` on a million samples (bench/view/view.c): a synthetic recording written
# as 12 OTLP requests (profiles-NNNNNN.binpb, as `spanprof record --endpoint --output-dir`
# leaves them), then the page built from it, against a baseline measured in the same run:
# reading and protobuf-c decoding the same files. Prints wall and CPU time, peak RSS, the
# page's size, and, when the page tests' browser driver runs (integration/view_browser.mjs:
# node, chromium, view/node_modules), the page's time to first render in headless Chromium.
# No root; never fails on the figures.
#   make bench-view [BUILD=dir] [BENCH_VIEW_ARGS="--samples 200000 --rounds 5 --browser none"]

BENCH_VIEW_ARGS ?=
VIEW_BENCH_PB_O := $(filter $(OBJ)/gen/opentelemetry/%,$(PROTO_O))

$(BUILD)/bench/view: bench/view/view.c exporter/otlp/otlp_pb.h $(VIEW_BENCH_PB_O) $(PROTO_H)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(filter %.c %.o,$^) -lprotobuf-c -ljson-c -lm -o $@

.PHONY: bench-view
bench: bench-view

bench-view: $(BUILD)/bench/view $(BUILD)/spanprof
	$(Q)$(BUILD)/bench/view --spanprof $(BUILD)/spanprof --dir $(BUILD)/bench/view-data \
		--browser integration/view_browser.mjs $(BENCH_VIEW_ARGS)
