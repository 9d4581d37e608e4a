# bench/startup: launch to the "sampling" line and to the first recorded sample, quiet and with
# every CPU saturated by cpuburn, against the 2 s target and optionally another agent binary.
# Needs root; never fails on the figures. See docs/performance.md.
#   make bench-startup [BUILD=dir] [BENCH_STARTUP_ARGS="--baseline /tmp/main/spanprof"]

BENCH_STARTUP_ARGS ?=

.PHONY: bench-startup
bench: bench-startup

bench-startup: $(BUILD)/spanprof
	$(Q)python3 bench/record/startup.py --build $(BUILD) $(BENCH_STARTUP_ARGS)
