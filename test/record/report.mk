# Unit tests of the end-of-run report (exporter/record/report.h: report*.c): the problems and
# their advice, the short and the --verbose output, the --stats-json document. No root.

$(BUILD)/test/test_report: test/record/test_report.c exporter/record/report.h $(LIBSPANPROF)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(LIBSPANPROF) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_report
