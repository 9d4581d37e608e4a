# Process hook cost (bench/process/hook_cost.py): BPF time of the exec, exit and mmap hooks per new
# process (fork+exec of /bin/true, and of a program that dlopens 4 libraries), with BPF run-time
# statistics on for the run (BPF_ENABLE_STATS), optionally against another agent binary for a
# ratio. Needs root; never fails on the figures. See docs/performance.md.
#   make bench-hooks [BUILD=dir] [BENCH_HOOKS_ARGS="--baseline other/spanprof --rounds 5"]

BENCH_HOOKS_ARGS ?=

.PHONY: bench-hooks
bench: bench-hooks

bench-hooks: $(BUILD)/spanprof
	$(Q)python3 bench/process/hook_cost.py --build $(BUILD) $(BENCH_HOOKS_ARGS)
