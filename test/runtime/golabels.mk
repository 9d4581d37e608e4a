# Unit tests of the goroutine-label layout reader (exporter/runtime/go/golabels.c), against the
# Go programs test/runtime/gopclntab.mk builds with the machine's Go and newer releases.

$(BUILD)/test/runtime/test_golabels: test/runtime/test_golabels.c $(LIBSPANPROF) | go-progs
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -DGOPROGS_DIR='"$(abspath $(GO_PROGS))"' \
		-DGO_BIN='"$(shell command -v $(GO))"' -DGO_NEW_RELEASES='"$(GO_NEW_RELEASES)"' \
		$< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/runtime/test_golabels
