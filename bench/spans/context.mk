# Thread-context writer benchmark (bench/spans/context_writer.c): ns per spctx_attach + spctx_detach
# pair, without and with 3 small attributes, against a baseline of plain __thread pointer stores
# measured in the same run. Two builds: linked against libspanprof_ctx.so (TLSDESC, what
# applications use) and with the source compiled into the executable (static TLS). No root.
# Never fails on the figures. See docs/span-links-sdk.md.
#   make bench-context-writer [BUILD=dir] [BENCH_CONTEXT_WRITER_ARGS="-r 21 -n 5000000"]

BENCH_CONTEXT_WRITER_ARGS ?=
CONTEXT_BENCH_CC    = $(CC) -g -O2 -std=gnu11 -Wall -Wextra -Werror -I$(WRITER_INC)

$(BUILD)/bench/context_writer_tlsdesc: bench/spans/context_writer.c $(WRITER_HDR) \
		$(WRITER_DIR)/libspanprof_ctx.so
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CONTEXT_BENCH_CC) -DVARIANT='"tlsdesc .so"' $< -L$(WRITER_DIR) \
		-Wl,-rpath,$(abspath $(WRITER_DIR)) -lspanprof_ctx -o $@

$(BUILD)/bench/context_writer_static: bench/spans/context_writer.c $(WRITER_HDR) $(WRITER_SRC)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CONTEXT_BENCH_CC) -D_GNU_SOURCE -DVARIANT='"static, in the executable"' $< \
		$(WRITER_SRC) $(WRITER_EXE_LDFLAGS) -lpthread -o $@

.PHONY: bench-context-writer
bench: bench-context-writer

bench-context-writer: $(BUILD)/bench/context_writer_tlsdesc $(BUILD)/bench/context_writer_static
	$(Q)$(BUILD)/bench/context_writer_tlsdesc $(BENCH_CONTEXT_WRITER_ARGS)
	$(Q)$(BUILD)/bench/context_writer_static $(BENCH_CONTEXT_WRITER_ARGS)
