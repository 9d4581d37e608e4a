# Fuzzing of the parsers that read what other processes control: ELF files (CFI, TLS
# classification, symbols and DWARF), /proc/PID/maps, /proc/kallsyms, /proc/PID/environ and
# cgroup, the OTEP 4719 process context and the OTEP 4947 thread-context record, perf maps and
# jitdump files.
# See docs/fuzzing.md.
#
# Each target test/fuzz/fuzz_<name>.c is built twice with clang, ASan and UBSan (every UBSan
# finding fatal), together with the exporter sources it needs, compiled here the same way (the
# agent's own objects are gcc-built and not instrumented):
#  - $(FUZZ_DIR)/fuzz_<name>: with libFuzzer, for `make fuzz`;
#  - $(BUILD)/test/fuzz_replay_<name>: with test/fuzz/replay.c instead, a unit test that replays
#    the committed corpus test/fuzz/corpus/<name>/ (seeds, minimized corpus, crash-* reproducers).
#
#   make fuzz [FUZZ_SECONDS=600] [FUZZ_TARGETS="cfi procmaps"] [FUZZ_FLAGS=-use_value_profile=1]
#       runs each target for FUZZ_SECONDS, one after the other, seeded with the committed corpus;
#       new inputs go to the scratch corpus $(FUZZ_DIR)/corpus/<name>, findings to
#       $(FUZZ_DIR)/artifacts/<name>/, the log to $(FUZZ_DIR)/log/<name>.log.
#   make fuzz-regress      replays every committed input (also part of `make unit`).
#   make fuzz-merge        minimizes committed + scratch corpus into test/fuzz/corpus/ (-merge=1),
#                          keeping the seed-* and crash-* files as they are.
#   make fuzz-seeds        regenerates the seed-* files (test/fuzz/make_seeds.sh).

FUZZ_DIR      := $(BUILD)/fuzz
FUZZ_CC       ?= clang
FUZZ_SECONDS  ?= 600
FUZZ_TARGETS  ?= cfi symbolize procmaps procctx threadctx ksyms procmeta perfmap jitdump python
FUZZ_FLAGS    ?=
FUZZ_ALL      := cfi symbolize procmaps procctx threadctx ksyms procmeta perfmap jitdump python
FUZZ_SAN      := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS   := -g -O1 -fno-omit-frame-pointer -std=gnu11 -Wall -Wextra -Werror \
		 -Wno-unused-parameter -D_GNU_SOURCE -DSPANPROF_VERSION='"$(VERSION)"' \
		 -I$(GEN) -I$(BUILD) -Iexporter -Ibpf -Itest/fuzz

# The exporter sources (and generated protobuf-c code) each target links.
FUZZ_PROCCTX_PB := $(addprefix gen/opentelemetry/proto/, \
	processcontext/v1development/process_context.pb-c common/v1/common.pb-c \
	resource/v1/resource.pb-c)
FUZZ_SRCS_cfi       := unwind/cfi spans/tlsctx process/procmaps symbols/elfcheck symbols/loadbias \
		       util/regfile
FUZZ_SRCS_symbolize := $(addprefix symbols/,symcache elfhdr objcache plt debugfile symtab \
			 dwarfframes load lookup elfcheck minidebuginfo debuginfod) runtime/go/gopclntab \
		       util/regfile
FUZZ_SRCS_procmaps  := process/procmaps spans/procctx util/regfile $(FUZZ_PROCCTX_PB)
FUZZ_SRCS_procctx   := spans/procctx process/procmaps util/regfile $(FUZZ_PROCCTX_PB)
FUZZ_SRCS_threadctx := spans/threadctx
FUZZ_SRCS_ksyms     := symbols/ksyms
FUZZ_SRCS_procmeta  := process/procmeta process/k8smeta
FUZZ_SRCS_perfmap   := runtime/jit/perfmap runtime/jit/jittab
FUZZ_SRCS_jitdump   := runtime/jit/jitdump runtime/jit/jittab
FUZZ_SRCS_python    := runtime/python/pylines runtime/python/pylayout runtime/python/pymerge
FUZZ_LIBS_cfi       := -lelf -lpthread
FUZZ_LIBS_symbolize := -ldw -lelf -liberty -lz -llzma -ldebuginfod -lpthread
FUZZ_LIBS_procmaps  := -lprotobuf-c
FUZZ_LIBS_procctx   := -lprotobuf-c

# libFuzzer options per target: longest input (ELF seeds are a few KiB; /proc text is lines).
FUZZ_OPTS     := -timeout=30 -rss_limit_mb=2048 -print_final_stats=1
FUZZ_OPTS_cfi       := -max_len=65536
FUZZ_OPTS_symbolize := -max_len=65536
FUZZ_OPTS_procmaps  := -max_len=16384
FUZZ_OPTS_procctx   := -max_len=8192
FUZZ_OPTS_threadctx := -max_len=1024
FUZZ_OPTS_ksyms     := -max_len=16384
FUZZ_OPTS_procmeta  := -max_len=8192
FUZZ_OPTS_perfmap   := -max_len=16384
FUZZ_OPTS_jitdump   := -max_len=16384
FUZZ_OPTS_python    := -max_len=4096

FUZZ_BINS     := $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_ALL))
FUZZ_REPLAYS  := $(addprefix $(BUILD)/test/fuzz_replay_,$(FUZZ_ALL))
FUZZ_HDRS     := $(EXP_HDRS) $(wildcard bpf/*.h) test/fuzz/fuzz.h $(PROTO_H)

# Exporter objects: obj/ with libFuzzer's coverage instrumentation, replay-obj/ without.
$(FUZZ_DIR)/obj/%.o: exporter/%.c $(FUZZ_HDRS)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(FUZZ_SAN) -c $< -o $@

$(FUZZ_DIR)/replay-obj/%.o: exporter/%.c $(FUZZ_HDRS)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -c $< -o $@

# Generated code: not ours to keep warning-free (as in the Makefile).
$(FUZZ_DIR)/obj/gen/%.o: $(GEN)/%.c $(PROTO_H)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -Wno-error -fsanitize=fuzzer $(FUZZ_SAN) -c $< -o $@

$(FUZZ_DIR)/replay-obj/gen/%.o: $(GEN)/%.c $(PROTO_H)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -Wno-error $(FUZZ_SAN) -c $< -o $@

define FUZZ_TARGET
$(FUZZ_DIR)/fuzz_$(1): test/fuzz/fuzz_$(1).c $(FUZZ_HDRS) \
		$(addprefix $(FUZZ_DIR)/obj/,$(addsuffix .o,$(FUZZ_SRCS_$(1))))
	$$(call msg,FUZZ-LD,$$@)
	$$(Q)mkdir -p $$(@D)
	$$(Q)$$(FUZZ_CC) $$(FUZZ_CFLAGS) -fsanitize=fuzzer $$(FUZZ_SAN) $$(filter %.c %.o,$$^) \
		$$(FUZZ_LIBS_$(1)) -o $$@

$(BUILD)/test/fuzz_replay_$(1): test/fuzz/fuzz_$(1).c test/fuzz/replay.c $(FUZZ_HDRS) \
		$(addprefix $(FUZZ_DIR)/replay-obj/,$(addsuffix .o,$(FUZZ_SRCS_$(1))))
	$$(call msg,FUZZ-LD,$$@)
	$$(Q)mkdir -p $$(@D)
	$$(Q)$$(FUZZ_CC) $$(FUZZ_CFLAGS) $$(FUZZ_SAN) -DFUZZ_NAME='"fuzz_$(1)"' \
		-DFUZZ_CORPUS_DIR='"$(abspath test/fuzz/corpus/$(1))"' $$(filter %.c %.o,$$^) \
		$$(FUZZ_LIBS_$(1)) -o $$@
endef
$(foreach t,$(FUZZ_ALL),$(eval $(call FUZZ_TARGET,$(t))))

UNIT_TESTS += $(FUZZ_REPLAYS)

.PHONY: fuzz fuzz-build fuzz-regress fuzz-merge fuzz-seeds
fuzz-build: $(FUZZ_BINS) $(FUZZ_REPLAYS)

# One target's run (a canned recipe: one line per command); the first finding stops `make fuzz`
# with the end of its log. The scratch corpus comes first, so libFuzzer adds new inputs there,
# not to test/fuzz/corpus/.
define fuzz_run
$(Q)mkdir -p $(FUZZ_DIR)/corpus/$(1) $(FUZZ_DIR)/artifacts/$(1) $(FUZZ_DIR)/log
$(call msg,FUZZ,$(1) for $(FUZZ_SECONDS) s (log: $(FUZZ_DIR)/log/$(1).log))
$(Q)if ! UBSAN_OPTIONS=print_stacktrace=1:$(UBSAN_OPTIONS) \
	$(FUZZ_DIR)/fuzz_$(1) -max_total_time=$(FUZZ_SECONDS) $(FUZZ_OPTS) $(FUZZ_OPTS_$(1)) \
	$(if $(wildcard test/fuzz/$(1).dict),-dict=test/fuzz/$(1).dict) \
	-artifact_prefix=$(FUZZ_DIR)/artifacts/$(1)/ $(FUZZ_FLAGS) \
	$(FUZZ_DIR)/corpus/$(1) test/fuzz/corpus/$(1) > $(FUZZ_DIR)/log/$(1).log 2>&1; then \
	tail -n 80 $(FUZZ_DIR)/log/$(1).log; \
	echo "fuzz: fuzz_$(1) found a problem; reproducer in $(FUZZ_DIR)/artifacts/$(1)/" >&2; \
	exit 1; \
fi
$(Q)grep -E '^#[0-9]+.*(DONE|pulse)' $(FUZZ_DIR)/log/$(1).log | tail -n 1
$(Q)grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' \
	$(FUZZ_DIR)/log/$(1).log

endef

fuzz: $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_TARGETS))
	$(foreach t,$(FUZZ_TARGETS),$(call fuzz_run,$(t)))

fuzz-regress: $(FUZZ_REPLAYS)
	$(Q)scripts/run-tests.sh unit $(FUZZ_REPLAYS)

# -merge=1 into a directory that starts with the seed-* and crash-* files: only inputs that reach
# edges beyond them are kept, under their SHA-1 names (-use_counters=0: edges, not hit counts,
# so the committed corpus stays small).
define fuzz_merge
$(call msg,MERGE,$(1))
$(Q)rm -rf $(FUZZ_DIR)/merge/$(1) && mkdir -p $(FUZZ_DIR)/merge/$(1) $(FUZZ_DIR)/corpus/$(1)
$(Q)cp $(wildcard test/fuzz/corpus/$(1)/seed-* test/fuzz/corpus/$(1)/crash-*) $(FUZZ_DIR)/merge/$(1)/
$(Q)$(FUZZ_DIR)/fuzz_$(1) -merge=1 -use_counters=0 $(FUZZ_OPTS_$(1)) $(FUZZ_DIR)/merge/$(1) test/fuzz/corpus/$(1) \
	$(FUZZ_DIR)/corpus/$(1) > $(FUZZ_DIR)/merge/$(1).log 2>&1 || \
	{ tail -n 40 $(FUZZ_DIR)/merge/$(1).log; exit 1; }
$(Q)rm -rf test/fuzz/corpus/$(1) && cp -r $(FUZZ_DIR)/merge/$(1) test/fuzz/corpus/$(1)
$(Q)echo "    $(1): $$(ls test/fuzz/corpus/$(1) | wc -l) files, $$(du -sh test/fuzz/corpus/$(1) | cut -f1)"

endef

fuzz-merge: $(addprefix $(FUZZ_DIR)/fuzz_,$(FUZZ_TARGETS))
	$(foreach t,$(FUZZ_TARGETS),$(call fuzz_merge,$(t)))

fuzz-seeds:
	$(Q)test/fuzz/make_seeds.sh
