# Unit tests of the alloc profile's host side: the entry points allocsyms finds in real files
# (libc, libstdc++, a stand-in allocator library, a static executable, broken files) and the
# sampling arithmetic shared with BPF (bpf/alloc.h exponential intervals, the unbiased weights).

ALLOC_PROGS := $(BUILD)/test/alloc-progs

$(ALLOC_PROGS)/libfakealloc.so: test/events/alloc-progs/fakealloc.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -fPIC -shared $< -o $@

$(ALLOC_PROGS)/staticprog: test/events/alloc-progs/staticprog.c
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -O2 -static $< -o $@

.PHONY: alloc-progs
alloc-progs: $(ALLOC_PROGS)/libfakealloc.so $(ALLOC_PROGS)/staticprog

$(BUILD)/test/test_alloc: test/events/test_alloc.c exporter/events/allocsyms.h exporter/events/allocsample.h bpf/alloc.h \
		$(OBJ)/events/allocsyms.o $(OBJ)/events/allocsample.o $(OBJ)/symbols/elfcheck.o | alloc-progs
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -DALLOC_PROGS_DIR='"$(abspath $(ALLOC_PROGS))"' $< $(OBJ)/events/allocsyms.o \
		$(OBJ)/events/allocsample.o $(OBJ)/symbols/elfcheck.o -lelf -lm -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_alloc
