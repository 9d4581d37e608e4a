# The page of `spanprof view` (view/): its template with every script and style inlined.
#   $(BUILD)/view/page.html              the template; the C side puts the JSON document where
#                                        the literal "__SPANPROF_DATA__" (quotes included) is
#   $(BUILD)/view/THIRD_PARTY_LICENSES   licenses of the bundled libraries (also in the page)
# The libraries (d3, d3-flame-graph) come from the npm registry by `npm ci` into
# view/node_modules, which is redone only when the lock file changes; the test driver
# (playwright-core, a dev dependency) comes with them.

VIEW_DIR    := $(BUILD)/view
VIEW_PAGE   := $(VIEW_DIR)/page.html
VIEW_SRCS   := $(wildcard view/src/*) view/build.mjs
VIEW_NPM    := view/node_modules/.spanprof-npm-ci
NPM         ?= npm
NODE        ?= node

$(VIEW_NPM): view/package.json view/package-lock.json
	$(call msg,NPM,ci view)
	$(Q)command -v $(NPM) >/dev/null || { echo "spanprof: the view page needs Node.js >= 20 with npm (it bundles its flame graph library from the npm registry)" >&2; exit 1; }
	$(Q)$(NPM) ci --prefix view --no-audit --no-fund --prefer-offline --loglevel=error >/dev/null
	$(Q)touch $@

$(VIEW_PAGE): $(VIEW_NPM) $(VIEW_SRCS)
	$(call msg,VIEW,$@)
	$(Q)$(NODE) view/build.mjs $(VIEW_DIR)

all: $(VIEW_PAGE)

# Syntax check of the page's and the tests' JavaScript (part of `make lint`).
.PHONY: view-lint
view-lint:
	$(Q)for f in view/src/app.js view/build.mjs integration/view_browser.mjs; do $(NODE) --check $$f || exit 1; done

lint: view-lint
