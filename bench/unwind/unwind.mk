# CFI table build benchmark (bench/unwind/unwind_tables.c): the largest shared library under /usr/lib
# (libLLVM on a machine with clang) and libc, timed against readelf on the same files.

UNWIND_BENCH_FILES ?= $(shell find /usr/lib -name '*.so*' -type f -size +1M -printf '%s %p\n' \
	2>/dev/null | sort -rn | head -1 | cut -d' ' -f2) /lib/x86_64-linux-gnu/libc.so.6

$(BUILD)/bench/unwind_tables: bench/unwind/unwind_tables.c $(OBJ)/unwind/cfi.o $(OBJ)/util/regfile.o
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(OBJ)/unwind/cfi.o $(OBJ)/util/regfile.o $(LDLIBS) -o $@

.PHONY: bench-unwind
bench-unwind: $(BUILD)/bench/unwind_tables
	$(Q)$(BUILD)/bench/unwind_tables $(UNWIND_BENCH_FILES)

bench: bench-unwind

# BPF time per sample of on_cpu_sample (bench/unwind/unwind_bpf.py): CFI walker against frame pointers
# (--unwind-max-mb 0) at depths 10, 50 and 300, with kernel.bpf_stats_enabled=1 (restored after).
# Needs root. Prints ratios against the frame-pointer run of the same invocation; never fails on the
# figures. See docs/performance.md, "Unwinding".
#   make bench-unwind-bpf [BUILD=dir] [BENCH_UNWIND_BPF_ARGS="--rounds 5 --cpu 1"]

BENCH_UNWIND_BPF_ARGS ?=

.PHONY: bench-unwind-bpf
bench: bench-unwind-bpf

bench-unwind-bpf: $(BUILD)/spanprof
	$(Q)python3 bench/unwind/unwind_bpf.py --build $(BUILD) $(BENCH_UNWIND_BPF_ARGS)

# Ground truth on real software (bench/unwind/unwind_truth.py): /usr/bin/python3 and redis-server (Debian,
# built without frame pointers) profiled by spanprof and by perf record --call-graph dwarf in the
# same window; share of samples whose leaf-to-root function sequence matches. Needs root; installs
# redis-server/redis-tools with apt-get if missing. Never fails on the figures.
#   make bench-unwind-truth [BUILD=dir] [BENCH_UNWIND_TRUTH_ARGS="--seconds 30 --deep 450"]

BENCH_UNWIND_TRUTH_ARGS ?=

.PHONY: bench-unwind-truth
bench: bench-unwind-truth

bench-unwind-truth: $(BUILD)/spanprof
	$(Q)python3 bench/unwind/unwind_truth.py --build $(BUILD) $(BENCH_UNWIND_TRUTH_ARGS)
