# Unit tests of exporter/util/regfile.c that need no root: which files are opened, which refused,
# the file-system magic table. The stalling file system itself: integration/test_hostile_files.py.
$(BUILD)/test/test_regfile: test/util/test_regfile.c exporter/util/regfile.h $(OBJ)/util/regfile.o
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< $(OBJ)/util/regfile.o -lpthread -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_regfile
