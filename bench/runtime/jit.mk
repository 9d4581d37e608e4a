# JIT naming benchmark (bench/runtime/jit_lookup.c): steady-state cost per JIT frame of a perf-map
# lookup against a plain binary search in the same run, first read and appended batches of a
# V8-sized map, and the 100 ms re-check. No root; never fails on the figures.
#   make bench-jit [BUILD=dir] [BENCH_JIT_ARGS="-n 100000 -l 2000000"]

BENCH_JIT_ARGS ?=

$(BUILD)/bench/jit_lookup: bench/runtime/jit_lookup.c $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -o $@

.PHONY: bench-jit
bench: bench-jit

bench-jit: $(BUILD)/bench/jit_lookup
	$(Q)$(BUILD)/bench/jit_lookup $(BENCH_JIT_ARGS)

# BPF time per sample with the V8 frame reader on and off (bench/runtime/v8_bpf.py), node running
# a chain of JavaScript functions. Root, bpftool, node.
#   make bench-v8 [BUILD=dir] [BENCH_V8_ARGS="--depths 5,50 --rounds 2"]
BENCH_V8_ARGS ?=

.PHONY: bench-v8
bench: bench-v8

bench-v8: $(BUILD)/spanprof
	$(Q)python3 bench/runtime/v8_bpf.py --build $(BUILD) $(BENCH_V8_ARGS)
