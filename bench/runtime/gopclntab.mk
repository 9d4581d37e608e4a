# Go PC/line table benchmark (bench/runtime/gopclntab.c): open, lookup and symbol-cache costs on Go
# binaries, by default the machine's `go` command and compiler (the largest Go binaries here).
#   make bench-gopclntab [BENCH_GOPCLNTAB_ARGS="-k 2000 -r 20 FILE..."]

BENCH_GOPCLNTAB_ARGS ?= $(shell command -v $(GO)) \
	$(shell $(GO) env GOTOOLDIR 2>/dev/null)/compile

$(BUILD)/bench/gopclntab: bench/runtime/gopclntab.c $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -o $@

.PHONY: bench-gopclntab
bench-gopclntab: $(BUILD)/bench/gopclntab
	$(Q)$(BUILD)/bench/gopclntab $(BENCH_GOPCLNTAB_ARGS)

bench: bench-gopclntab
