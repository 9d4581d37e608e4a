# bench/events: slowdown of an allocation-heavy and a lock-heavy workload under each profile type
# (cpu, alloc, lock, offcpu) at its defaults, against running alone in the same invocation. Needs
# root; a type the agent rejects prints n/a. Never fails on the figures. See docs/performance.md.
#   make bench-events [BUILD=dir] [BENCH_EVENTS_ARGS="--rounds 7 --pid"]

BENCH_EVENTS_ARGS ?=

.PHONY: bench-events
bench: bench-events

bench-events: $(BUILD)/spanprof
	$(Q)python3 bench/events/events.py --build $(BUILD) $(BENCH_EVENTS_ARGS)
