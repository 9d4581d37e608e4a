# Unit test: every CO-RE relocation of the BPF object resolves against the saved BTF of each
# supported kernel (test/sampling/fixtures/kernels/, see its README) and the build host's. Needs bpftool,
# no root, no guest.

KERNEL_BTFS := $(patsubst test/sampling/fixtures/kernels/%.btf.xz,$(BUILD)/test/kernels/%.btf,\
	$(wildcard test/sampling/fixtures/kernels/*.btf.xz))

$(BUILD)/test/kernels/%.btf: test/sampling/fixtures/kernels/%.btf.xz
	$(call msg,XZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)xz -dc $< > $@

$(BUILD)/test/sampling/test_core_btf: test/sampling/test_core_btf.c $(BUILD)/sampler.bpf.o $(KERNEL_BTFS)
	$(call msg,LINK,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -DBPF_OBJ='"$(abspath $(BUILD)/sampler.bpf.o)"' \
		-DKERNEL_BTF_DIR='"$(abspath $(BUILD)/test/kernels)"' $< $(LDLIBS) -lcmocka -o $@

UNIT_TESTS += $(BUILD)/test/sampling/test_core_btf
