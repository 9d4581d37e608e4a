# Unit tests of the export path that need no network: the bounded request queue.
$(BUILD)/test/test_export_queue: test/otlp/test_export_queue.c $(OBJ)/otlp/export_queue.o
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -lpthread -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_export_queue
