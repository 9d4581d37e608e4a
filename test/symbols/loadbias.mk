# Unit tests of exporter/symbols/loadbias.c (the load bias of a mapped ELF file). No root.
$(BUILD)/test/test_loadbias: test/symbols/test_loadbias.c exporter/symbols/loadbias.h \
		$(OBJ)/symbols/loadbias.o
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(filter %.c %.o,$^) $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_loadbias
