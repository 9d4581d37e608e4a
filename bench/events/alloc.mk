# bench/alloc_overhead: slowdown of an allocation-heavy loop under --profile alloc (default rate,
# and the uprobe trap alone) against running alone, in one invocation. Needs root; prints ratios,
# never fails on them. See docs/performance.md.
#   make bench-alloc [BUILD=dir] [BENCH_ALLOC_ARGS="--rounds 5 --work 20,200"]

BENCH_ALLOC_ARGS ?=

.PHONY: bench-alloc
bench: bench-alloc

bench-alloc: $(BUILD)/spanprof
	$(Q)python3 bench/events/alloc_overhead.py --build $(BUILD) $(BENCH_ALLOC_ARGS)
