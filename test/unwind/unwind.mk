# Unit tests of the CFI walker's shared logic (bpf/unwind_walk.h) as ordinary C: lookups, every
# step kind, and whole walks of the test's own stack checked against backtrace(). The test is
# built without frame pointers so that only CFI can walk it.

$(BUILD)/test/test_unwind: test/unwind/test_unwind.c bpf/unwind_walk.h bpf/unwind.h $(OBJ)/unwind/cfi.o \
			   $(OBJ)/process/procmaps.o $(OBJ)/util/regfile.o
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -fomit-frame-pointer -fno-optimize-sibling-calls $< $(OBJ)/unwind/cfi.o \
		$(OBJ)/process/procmaps.o $(OBJ)/util/regfile.o $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_unwind
