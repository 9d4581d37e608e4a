# The long soak run (integration/soak/soak.py, docs/soak.md): the agent under process churn,
# fresh binaries, threads, dlopen/dlclose and Collector restarts for SOAK_SECONDS; the curve goes
# to $(BUILD)/test-artifacts/soak/. Needs root. CI runs the short one (integration/test_soak.py).
#   make soak [SOAK_SECONDS=600] [SOAK_ARGS="--rate 300 --restart-every 60"]

SOAK_SECONDS ?= 600
SOAK_ARGS ?=

.PHONY: soak
soak: $(BUILD)/spanprof
	$(Q)python3 integration/soak/soak.py --build $(BUILD) --seconds $(SOAK_SECONDS) $(SOAK_ARGS)
