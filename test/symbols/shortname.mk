# Unit tests of --short-names (exporter/symbols/shortname.c).
$(BUILD)/test/test_shortname: test/symbols/test_shortname.c exporter/symbols/shortname.h \
		$(OBJ)/symbols/shortname.o
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(filter %.c %.o,$^) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_shortname
