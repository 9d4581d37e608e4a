# Symbolizer memory/speed benchmark (bench/symbols/symbolize_mem.c): the largest ELF files of this machine
# through one symcache, unbounded against the default budget, each in its own process. Prints
# peak RSS (VmHWM, RssAnon, RssFile) and lookups per second; never fails on the figures.
#   make bench-symbolize [BUILD=dir] [BENCH_SYMBOLIZE_ARGS="-n 20 -k 2000 -r 3 -b 16777216"]

BENCH_SYMBOLIZE_ARGS ?=

$(BUILD)/bench/symbolize_mem: bench/symbols/symbolize_mem.c $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -o $@

.PHONY: bench-symbolize
bench-symbolize: $(BUILD)/bench/symbolize_mem
	$(Q)$(BUILD)/bench/symbolize_mem $(BENCH_SYMBOLIZE_ARGS)

bench: bench-symbolize
