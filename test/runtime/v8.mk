# Unit tests of exporter/runtime/v8/ (V8's postmortem metadata in the node executable, the
# out-of-process function name reader) against the machine's node: a node process the test
# starts prints its functions' addresses (%DebugPrint); the test names them from outside. No root.

$(BUILD)/test/runtime/test_v8: test/runtime/test_v8.c $(wildcard exporter/runtime/v8/*.h) bpf/v8.h \
		$(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/runtime/test_v8
