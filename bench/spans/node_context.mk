# Node.js context-manager benchmark (writer/node/test/bench.js): ns per context.with() and per
# await continuation with spanprof-context's SpanprofContextManager, as a ratio to the SDK's own
# AsyncLocalStorageContextManager in the same run (alternating rounds, best of each). Installs
# docs/node.md's pinned package.json into build/node-app (as integration/test_span_node.py does;
# its file: path to writer/node assumes the default BUILD=build). BENCH_NODE picks the node
# binary. No root. Never fails on the figures.
#   make bench-node-context [BENCH_NODE=/path/to/node] [BENCH_NODE_CONTEXT_ARGS=400000]

BENCH_NODE ?= node
BENCH_NODE_CONTEXT_ARGS ?=
BENCH_NODE_APP = build/node-app

.PHONY: bench-node-context
bench: bench-node-context

bench-node-context:
	$(Q)mkdir -p $(BENCH_NODE_APP)
	$(Q)python3 -c 'import re, sys; t = open("docs/node.md").read(); \
		m = re.search(r"<!-- node-app-package[^>]*-->\s*```json\n(.*?)```", t, re.S); \
		sys.stdout.write(m.group(1))' > $(BENCH_NODE_APP)/package.json
	$(Q)cd $(BENCH_NODE_APP) && npm install --install-links --no-audit --no-fund --loglevel=error >/dev/null
	$(Q)NODE_PATH=$(abspath $(BENCH_NODE_APP))/node_modules $(BENCH_NODE) writer/node/test/bench.js \
		$(BENCH_NODE_CONTEXT_ARGS)
