# bench/exec_first_stack: time from a new FP-less program's launch to its first complete stack,
# on a quiet machine and with every CPU saturated by compile loops, optionally against another
# agent binary for ratios. Needs root; never fails on the figures. See docs/performance.md.
#   make bench-exec [BUILD=dir] [BENCH_EXEC_ARGS="--runs 9 --baseline /path/to/spanprof"]

BENCH_EXEC_ARGS ?=

.PHONY: bench-exec
bench: bench-exec

bench-exec: $(BUILD)/spanprof
	$(Q)python3 bench/unwind/exec_first_stack.py --build $(BUILD) $(BENCH_EXEC_ARGS)
