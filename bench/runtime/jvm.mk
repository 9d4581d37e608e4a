# The HotSpot walk against the native CFI walk of the same depth (issue 29), measured the same way
# in one invocation (bench/runtime/jvm_vs_cfi.py): BPF time per sample of bench/workloads/
# JvmRecurse.java interpreted (-Xint) and compiled, against integration/workloads/unw_recurse.c
# built -fomit-frame-pointer; cost per frame and the agent's CPU per sample, as ratios. Needs root,
# bpftool and a JDK (JAVAC, and the java beside it). Never fails on the figures.
#   make bench-jvm-cfi [BUILD=dir] [JAVAC=path] [BENCH_JVM_CFI_ARGS="--depths 10,50 --rounds 2"]

BENCH_JVM_CFI_ARGS ?=
JAVAC ?= javac

.PHONY: bench-jvm-cfi
bench: bench-jvm-cfi

bench-jvm-cfi: $(BUILD)/spanprof
	$(Q)python3 bench/runtime/jvm_vs_cfi.py --build $(BUILD) --javac $(JAVAC) $(BENCH_JVM_CFI_ARGS)
