# Unit tests of the Go PC/line table reader (exporter/runtime/go/gopclntab.c) against Go
# programs built here with the machine's Go (test/go-progs, a module of its own), in the
# variants a host meets: with symbols and DWARF, -ldflags='-s -w' (stripped), -trimpath,
# position-independent, and without inlining (the contrast to the inlined frames of the others).

GO         ?= go
GO_PROGS   := $(BUILD)/test/go-progs
GO_ENV     := GOFLAGS=-mod=mod GOTOOLCHAIN=local
GO_SRCS    := $(shell find test/go-progs -name '*.go' -o -name go.mod)

GO_PROG_FILES := $(addprefix $(GO_PROGS)/goprog-, normal stripped trimpath pie noinline)

$(GO_PROGS)/goprog-normal: $(GO_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd test/go-progs && $(GO_ENV) $(GO) build -o $(abspath $@) ./goprog

$(GO_PROGS)/goprog-stripped: $(GO_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd test/go-progs && $(GO_ENV) $(GO) build -ldflags='-s -w' -o $(abspath $@) ./goprog

$(GO_PROGS)/goprog-trimpath: $(GO_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd test/go-progs && $(GO_ENV) $(GO) build -trimpath -ldflags='-s -w' -o $(abspath $@) ./goprog

$(GO_PROGS)/goprog-pie: $(GO_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd test/go-progs && $(GO_ENV) $(GO) build -buildmode=pie -ldflags='-s -w' -o $(abspath $@) ./goprog

$(GO_PROGS)/goprog-noinline: $(GO_SRCS)
	$(call msg,GO,$@)
	$(Q)mkdir -p $(@D)
	$(Q)cd test/go-progs && $(GO_ENV) $(GO) build -gcflags=all=-l -ldflags='-s -w' -o $(abspath $@) ./goprog

# A phony target looks at the programs on every run (see test/symbolize.mk).
.PHONY: go-progs
go-progs: $(GO_PROG_FILES)

$(BUILD)/test/test_gopclntab: test/test_gopclntab.c $(LIBSPANPROF) | go-progs sym-progs
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -DGOPROGS_DIR='"$(abspath $(GO_PROGS))"' \
		-DSRC_DIR='"$(abspath test/go-progs)"' -DGO_BIN='"$(shell command -v $(GO))"' \
		-DC_PROG='"$(abspath $(SYM_PROGS))/cprog-pie"' \
		$< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_gopclntab
