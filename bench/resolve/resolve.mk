# bench/resolve: resolve time per sample (bench/resolve/resolve_time.c), before and after, in one
# run: the golden replay test's recorded samples (test/record/fixtures/replay/) through
# resolve__sample() many rounds, the same program built against a base revision (git archive of
# BASE, default the merge-base with main, in $(BUILD)/bench/resolve-base/) and against this
# tree, run alternately (bench/resolve/before_after.py). Prints thread CPU ns per sample of each
# and the ratio, into a profile kept between rounds (warm) and one reset before each (fresh).
# No root; never fails on the figures.
#   make bench-resolve [BASE=rev] [BUILD=dir] [BENCH_RESOLVE_RUNS=6]
#                      [BENCH_RESOLVE_ARGS="--rounds 5000 --batches 5"]

BASE ?=
BENCH_RESOLVE_RUNS ?= 6
BENCH_RESOLVE_ARGS ?=

$(BUILD)/bench/resolve_time: bench/resolve/resolve_time.c $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -o $@

.PHONY: bench-resolve
bench: bench-resolve

bench-resolve: $(BUILD)/bench/resolve_time
	$(Q)python3 bench/resolve/before_after.py --this $(BUILD)/bench/resolve_time \
		--build $(BUILD) --base "$(BASE)" --cc "$(CC)" --runs $(BENCH_RESOLVE_RUNS) \
		-- --dir test/record/fixtures/replay $(BENCH_RESOLVE_ARGS)
