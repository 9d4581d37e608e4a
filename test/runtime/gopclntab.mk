# Unit tests of the Go PC/line table reader (exporter/runtime/go/gopclntab.c) against Go
# programs built here with the machine's Go (test/runtime/go-progs, a module of its own), in the
# variants a host meets: with symbols and DWARF, -ldflags='-s -w' (stripped), -trimpath,
# position-independent, and without inlining (the contrast to the inlined frames of the others).

GO         ?= go
GO_PROGS   := $(BUILD)/test/runtime/go-progs
GO_ENV     := GOFLAGS=-mod=mod GOTOOLCHAIN=local
GO_SRCS    := $(shell find test/runtime/go-progs -name '*.go' -o -name go.mod)

GO_PROG_FILES := $(addprefix $(GO_PROGS)/goprog-, normal stripped trimpath pie noinline) \
		 $(GO_PROGS)/libgolib.so $(GO_PROGS)/libgolib-stripped.so

$(GO_PROGS)/goprog-normal: $(GO_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd test/runtime/go-progs && $(GO_ENV) $(GO) build -o $(abspath $@) ./goprog

$(GO_PROGS)/goprog-stripped: $(GO_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd test/runtime/go-progs && $(GO_ENV) $(GO) build -ldflags='-s -w' -o $(abspath $@) ./goprog

$(GO_PROGS)/goprog-trimpath: $(GO_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd test/runtime/go-progs && $(GO_ENV) $(GO) build -trimpath -ldflags='-s -w' -o $(abspath $@) ./goprog

$(GO_PROGS)/goprog-pie: $(GO_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd test/runtime/go-progs && $(GO_ENV) $(GO) build -buildmode=pie -ldflags='-s -w' -o $(abspath $@) ./goprog

$(GO_PROGS)/goprog-noinline: $(GO_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd test/runtime/go-progs && $(GO_ENV) $(GO) build -gcflags=all=-l -ldflags='-s -w' -o $(abspath $@) ./goprog

# Go in a shared library (-buildmode=c-shared, external linking: C code before runtime.text,
# moduledata's pointers left to R_X86_64_RELATIVE relocations), with and without symbols.
$(GO_PROGS)/libgolib.so: $(GO_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd test/runtime/go-progs && $(GO_ENV) $(GO) build -buildmode=c-shared -o $(abspath $@) ./golib

$(GO_PROGS)/libgolib-stripped.so: $(GO_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd test/runtime/go-progs && $(GO_ENV) $(GO) build -buildmode=c-shared -ldflags='-s -w' -o $(abspath $@) ./golib

# Other Go releases: the stripped program built by releases of the 1.16-1.17 and 1.18-1.19
# layouts and by a release newer than the machine's Go (and that one with DWARF too, for the
# goroutine-label offsets of test_golabels), when their toolchains are in the module cache
# already (the build uses no network: `make go-toolchains` or `make deps` fetch them through
# the Go module proxy, golang.org/toolchain). Missing ones are skipped by the tests, which name
# them.
GO_RELEASES     := go1.17.13 go1.18.10 go1.19.13 go1.27.3
GO_NEW_RELEASES := go1.27.3
GO_OTHER_FILES  := $(addprefix $(GO_PROGS)/goprog-,$(GO_RELEASES)) \
		   $(addprefix $(GO_PROGS)/goprog-dwarf-,$(GO_NEW_RELEASES))

$(GO_PROGS)/goprog-go1.%: $(GO_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd test/runtime/go-progs && GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=go1.$* \
		$(GO) build -ldflags='-s -w' -o $(abspath $@) ./goprog 2>/dev/null || \
		echo "  (toolchain go1.$* not in the module cache: make go-toolchains)"

$(GO_PROGS)/goprog-dwarf-go1.%: $(GO_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd test/runtime/go-progs && GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=go1.$* \
		$(GO) build -o $(abspath $@) ./goprog 2>/dev/null || \
		echo "  (toolchain go1.$* not in the module cache: make go-toolchains)"

# For test_golabels (test/runtime/golabels.mk): the labels test program with uncompressed
# DWARF, and copies whose runtime/pprof.labelMap has the kind map (21: what Go 1.18-1.23
# write) or one no release wrote (22, pointer).
GO_LABELMAP := $(addprefix $(GO_PROGS)/golabelsmap-,dwarf kind21 kind22)

$(GO_PROGS)/golabelsmap-dwarf: $(GO_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd test/runtime/go-progs && $(GO_ENV) $(GO) build -ldflags=-compressdwarf=false \
		-o $(abspath $@) ./golabelsmap

$(GO_PROGS)/golabelsmap-kind%: $(GO_PROGS)/golabelsmap-dwarf test/runtime/go-progs/labelmap_kind.py
	$(call msg,PATCH,$@)
	$(Q)python3 test/runtime/go-progs/labelmap_kind.py $< $@ $*

.PHONY: go-toolchains
go-toolchains:
	$(Q)for v in $(GO_RELEASES); do GOTOOLCHAIN=$$v $(GO) version || exit 1; done

# A phony target looks at the programs on every run (see test/symbolize.mk).
.PHONY: go-progs
go-progs: $(GO_PROG_FILES) $(GO_OTHER_FILES) $(GO_LABELMAP)

$(BUILD)/test/runtime/test_gopclntab: test/runtime/test_gopclntab.c $(LIBSPANPROF) | go-progs sym-progs
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -DGOPROGS_DIR='"$(abspath $(GO_PROGS))"' \
		-DSRC_DIR='"$(abspath test/runtime/go-progs)"' -DGO_BIN='"$(shell command -v $(GO))"' \
		-DC_PROG='"$(abspath $(SYM_PROGS))/cprog-pie"' \
		-DGO_RELEASES='"$(GO_RELEASES)"' \
		$< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/runtime/test_gopclntab
