# bench/overhead: workload slowdown, CPU time and peak RSS of spanprof (19 and 99 Hz) against
# running alone and against perf record -g. Needs root. Prints ratios against a baseline measured
# in the same invocation; never fails on the figures. See docs/performance.md.
#   make bench-overhead [BUILD=dir] [BENCH_OVERHEAD_ARGS="--rounds 7 --cpu 1"]

BENCH_OVERHEAD_ARGS ?=

.PHONY: bench-overhead
bench: bench-overhead

bench-overhead: $(BUILD)/spanprof
	$(Q)python3 bench/record/overhead.py --build $(BUILD) $(BENCH_OVERHEAD_ARGS)
