# Unit tests of exporter/runtime/runtime.c (the runtime interface's shared per-process
# lifecycle) with a runtime of the test's own: no file read, no BPF map, no root.

$(BUILD)/test/runtime/test_runtime: test/runtime/test_runtime.c test/testproc.h \
		exporter/runtime/runtime.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/runtime/test_runtime
