# Unit tests of exporter/process/proclife.c (a process's identity: PID and start time) and of the
# process table's use of it (reused PIDs, sweeping exited processes). Runs without root.

$(BUILD)/test/test_proclife: test/process/test_proclife.c exporter/process/proclife.h exporter/process/proctab.h \
		test/testproc.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_proclife
