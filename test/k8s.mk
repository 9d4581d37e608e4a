# Unit tests of the Kubernetes name cache (exporter/k8smeta.c) and of the targeting flags'
# syntax (exporter/targets.c). No root: the BPF maps are exercised by integration/test_filters.py.
$(BUILD)/test/test_k8smeta: test/test_k8smeta.c exporter/k8smeta.h exporter/targets.h \
		$(OBJ)/k8smeta.o $(OBJ)/targets.o $(OBJ)/procmeta.o
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(filter %.c %.o,$^) -lbpf -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/test_k8smeta
