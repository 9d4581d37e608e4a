# Unit tests of the lock profile's futex classification (bpf/lock.h, shared with BPF).

$(BUILD)/test/test_lock: test/events/test_lock.c bpf/lock.h
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $< -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_lock
