# Issue 16's three figures for new processes and a loaded machine in one invocation, each against
# the same baseline agent when BASELINE is set: time from exec to the first complete stack
# (bench-exec), BPF time of the process hooks per new process (bench-hooks; add the OpenTelemetry
# profiler with BENCH_HOOKS_ARGS="--peer BIN"), and samples lost to a full ring buffer at 19, 99
# and 999 Hz and for the most detailed event settings with the CPUs saturated (bench-ring).
# Needs root; never fails on the figures. See docs/performance.md.
#   make bench-newproc [BUILD=dir] [BASELINE=/path/to/other/spanprof]

BASELINE ?=
newproc_baseline = $(if $(BASELINE),--baseline $(BASELINE))

.PHONY: bench-newproc
bench-newproc: $(BUILD)/spanprof
	$(Q)python3 bench/unwind/exec_first_stack.py --build $(BUILD) $(newproc_baseline) $(BENCH_EXEC_ARGS)
	$(Q)python3 bench/process/hook_cost.py --build $(BUILD) $(newproc_baseline) $(BENCH_HOOKS_ARGS)
	$(Q)python3 bench/sampling/ring_loss.py --build $(BUILD) $(newproc_baseline) $(BENCH_RING_ARGS)
