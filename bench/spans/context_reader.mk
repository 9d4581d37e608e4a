# BPF time per sample with the thread-context reader on vs off (bench/spans/context_reader.py): the
# span-link test server profiled with --no-span-links, with the static-TLS reader, with the DTV
# reader and with --context-uprobe, alternating, kernel.bpf_stats_enabled=1 (restored after).
# Needs root; never fails on the figures. The writer's own cost: bench-context-writer.
#   make bench-context-reader [BUILD=dir] [BENCH_CONTEXT_ARGS="--rounds 5"]

BENCH_CONTEXT_ARGS ?=

.PHONY: bench-context-reader
bench: bench-context-reader

bench-context-reader: $(BUILD)/spanprof
	$(Q)python3 bench/spans/context_reader.py --build $(BUILD) $(BENCH_CONTEXT_ARGS)

# Both halves of the span-link cost in one run: the writer's attach+detach (ns per pair,
# against plain TLS stores) and the reader's BPF time per sample (on vs off).
.PHONY: bench-context
bench-context: bench-context-writer bench-context-reader
