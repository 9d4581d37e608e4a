# bench/lock_overhead: slowdown of a lock-heavy program under --profile lock, and the cost of one
# contended acquisition's futex call with the profile on. Needs root. Ratios against a baseline
# of the same invocation; never fails on the figures. See docs/performance.md.
#   make bench-lock [BUILD=dir] [BENCH_LOCK_ARGS="--rounds 9"]

BENCH_LOCK_ARGS ?=

.PHONY: bench-lock
bench: bench-lock

bench-lock: $(BUILD)/spanprof
	$(Q)python3 bench/events/lock_overhead.py --build $(BUILD) $(BENCH_LOCK_ARGS)
