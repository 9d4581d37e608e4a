# bench/ring_loss: the share of samples lost to a full ring buffer with every CPU saturated by
# compile loops: cpu at 19, 99 and 999 Hz (whole host), alloc of every allocation, offcpu from
# 1 us; optionally against another agent binary. Needs root; never fails on the figures.
#   make bench-ring [BUILD=dir] [BENCH_RING_ARGS="--seconds 20 --baseline /path/to/spanprof"]

BENCH_RING_ARGS ?=

.PHONY: bench-ring
bench: bench-ring

bench-ring: $(BUILD)/spanprof
	$(Q)python3 bench/sampling/ring_loss.py --build $(BUILD) $(BENCH_RING_ARGS)
