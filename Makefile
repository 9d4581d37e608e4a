# spanprof: one Makefile for the BPF programs, the agent, the tests and the benchmarks.
# Quiet by default; `make V=1` prints full commands. Outputs go to $(BUILD) only.

BUILD      ?= build
CC         ?= gcc
CLANG      ?= clang
BPFTOOL    ?= bpftool
PROTOC_C   ?= protoc-c
ARCH       := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
VERSION    := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.DEFAULT_GOAL := all

GEN        := $(BUILD)/gen
OBJ        := $(BUILD)/obj
CFLAGS     ?= -g -O2
CFLAGS     += -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE \
	      -DSPANPROF_VERSION='"$(VERSION)"' -I$(GEN) -I$(BUILD) -Iexporter -Ibpf
LDLIBS     += -lyaml -lcap -lbpf -ldw -lelf -liberty -lprotobuf-c -lgrpc -lgpr -lcrypto -lz -llzma -ldebuginfod -lpthread -lm -ljson-c -lmicrohttpd
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror -I$(BUILD) -Ibpf
# BPF_EXTRA: more flags for bench builds (e.g. -DSP_WALK_TIMING, bench/runtime/walk_time.py).
BPF_CFLAGS += $(BPF_EXTRA)

# --- generated code -------------------------------------------------------------------------
$(BUILD)/vmlinux.h:
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

PROTOS     := $(shell find otlp-proto -name '*.proto' | sort)
PROTO_C    := $(patsubst otlp-proto/%.proto,$(GEN)/%.pb-c.c,$(PROTOS))
PROTO_H    := $(PROTO_C:.c=.h)
PROTO_O    := $(patsubst $(GEN)/%.c,$(OBJ)/gen/%.o,$(PROTO_C))

$(GEN)/%.pb-c.c $(GEN)/%.pb-c.h: otlp-proto/%.proto
	$(call msg,PROTOC-C,$<)
	$(Q)mkdir -p $(GEN)
	$(Q)$(PROTOC_C) --proto_path=otlp-proto --c_out=$(GEN) $<

$(OBJ)/gen/%.o: $(GEN)/%.c $(PROTO_H)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Wno-error -c $< -o $@

# --- BPF ------------------------------------------------------------------------------------
BPF_SRCS   := $(wildcard bpf/*.bpf.c)
BPF_OBJS   := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS))
BPF_SKELS  := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))

$(BUILD)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(BUILD)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

# Generated files are kept between builds (they are inputs of several rules).
.SECONDARY: $(BPF_OBJS) $(BPF_SKELS) $(PROTO_C) $(PROTO_H)

# --- agent ----------------------------------------------------------------------------------
# The agent's modules, one folder per concern (docs/architecture.md).
EXP_SRCS   := $(shell find exporter -name '*.c' | sort)
EXP_HDRS   := $(shell find exporter -name '*.h' | sort)
EXP_OBJS   := $(patsubst exporter/%.c,$(OBJ)/%.o,$(EXP_SRCS))
LIB_OBJS   := $(filter-out $(OBJ)/cli/main.o,$(EXP_OBJS)) $(PROTO_O)
LIBSPANPROF := $(BUILD)/libspanprof.a

$(OBJ)/%.o: exporter/%.c $(EXP_HDRS) $(wildcard bpf/*.h) $(BPF_SKELS) $(PROTO_H)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(LIBSPANPROF): $(LIB_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/spanprof: $(OBJ)/cli/main.o $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(LDLIBS) -o $@

.PHONY: all deps run test unit integration bench lint format clean cpython-3.14
all: $(BUILD)/spanprof

# Installs the Debian packages the build, the tests and the benchmarks need (only what is missing).
deps:
	$(Q)scripts/install-deps.sh

# CPython 3.14 for the Python tests (no Debian 12 package ships it): Debian sid's packages,
# checked against sid's signed index, unpacked into $(BUILD)/cpython-3.14/root (about 20 MB of
# downloads, no compile; kept, and skipped while there). scripts/cpython-3.14.py, docs/python.md.
cpython-3.14:
	$(Q)scripts/cpython-3.14.py $(BUILD)/cpython-3.14

# The main job: a 10-second profile of the whole machine into out/.
run: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(BUILD)/spanprof record --duration 10 --output-dir out
	$(Q)$(BUILD)/spanprof view out --output out/profile.html

# Test and bench fragments add their own targets and prerequisites.
UNIT_TESTS :=
INTEGRATION_TESTS :=
include $(wildcard writer/*.mk view/*.mk test/*.mk test/*/*.mk integration/*.mk bench/*/*.mk)

unit: all $(UNIT_TESTS)
	$(Q)scripts/run-tests.sh unit $(UNIT_TESTS)

integration: all
	$(Q)scripts/run-tests.sh integration

test: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(MAKE) --no-print-directory cpython-3.14 || \
		echo "spanprof: no CPython 3.14 (see above): its Python tests skip, saying so" >&2
	$(Q)$(MAKE) --no-print-directory check

check: all $(UNIT_TESTS)
	$(Q)scripts/run-tests.sh all $(UNIT_TESTS)

lint:
	$(Q)clang-format --dry-run --Werror $$(git ls-files 'exporter/*.[ch]' 'bpf/*.[ch]' 'test/*.[ch]' 'writer/*.[ch]' 'bench/*.[ch]' 'bench/workloads/*.[ch]' 'integration/workloads/*.[ch]' 'integration/soak/*.[ch]')

format:
	$(Q)clang-format -i $$(git ls-files 'exporter/*.[ch]' 'bpf/*.[ch]' 'test/*.[ch]' 'writer/*.[ch]' 'bench/*.[ch]' 'bench/workloads/*.[ch]' 'integration/workloads/*.[ch]' 'integration/soak/*.[ch]')

clean:
	$(Q)rm -rf $(BUILD)
