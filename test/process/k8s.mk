# Unit tests of the Kubernetes name cache (exporter/process/k8smeta.c) and of the targeting flags'
# syntax (exporter/sampling/targets.c). No root: the BPF maps are exercised by integration/test_filters.py.
$(BUILD)/test/test_k8smeta: test/process/test_k8smeta.c exporter/process/k8smeta.h exporter/sampling/targets.h \
		$(OBJ)/process/k8smeta.o $(OBJ)/sampling/targets.o $(OBJ)/process/procmeta.o
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(filter %.c %.o,$^) -lbpf -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_k8smeta
