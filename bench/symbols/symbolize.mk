# Symbolizer memory/speed benchmark (bench/symbols/symbolize_mem.c): the largest ELF files of this machine
# through one symcache, unbounded against the default budget, each in its own process. Prints
# peak RSS (VmHWM, RssAnon, RssFile) and lookups per second; never fails on the figures.
#   make bench-symbolize [BUILD=dir] [BENCH_SYMBOLIZE_ARGS="-n 20 -k 2000 -r 3 -b 16777216"]

BENCH_SYMBOLIZE_ARGS ?=

$(BUILD)/bench/symbolize_mem: bench/symbols/symbolize_mem.c bench/symbols/procstatus.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -o $@

.PHONY: bench-symbolize
bench-symbolize: $(BUILD)/bench/symbolize_mem
	$(Q)$(BUILD)/bench/symbolize_mem $(BENCH_SYMBOLIZE_ARGS)

bench: bench-symbolize

# The interpreter loops of many CPython versions (bench/symbols/pyleaves.c): CPU per lookup of a
# new leaf address, loads, evictions, peak RSS and a checksum of the answers, per budget.
#   make bench-pyleaves [BUILD=dir] [BENCH_PYLEAVES_ARGS="-k 3000 -b 12,32,0"]
BENCH_PYLEAVES_ARGS ?=

$(BUILD)/bench/pyleaves: bench/symbols/pyleaves.c bench/symbols/procstatus.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -o $@

.PHONY: bench-pyleaves
bench-pyleaves: $(BUILD)/bench/pyleaves
	$(Q)$(BUILD)/bench/pyleaves $(BENCH_PYLEAVES_ARGS)

bench: bench-pyleaves
