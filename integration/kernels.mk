# Other kernels booted as QEMU guests (integration/kernels/, docs/kernels.md). By hand:
#   make test-kernels KERNELS="6.1 6.12"     (a series or a Debian package name each)
# `make test` runs the smoke suite on 6.1 through integration/test_kernels.py.
KERNELS ?= 6.1 6.12
.PHONY: test-kernels
test-kernels: all
	$(Q)for k in $(KERNELS); do \
		BUILD=$(BUILD) integration/kernels/run.sh $$k $(BUILD)/kernel-results/$$k || true; \
	done; python3 integration/kernels/summary.py $(addprefix $(BUILD)/kernel-results/,$(KERNELS))
