# Java agent extension benchmark (bench/spans/JavaContextBench.java): ns per Context.makeCurrent()
# + Scope.close() under the OpenTelemetry Java agent without and with the spanprof extension
# (writer/java), as a ratio, in one run (child JVMs alternate). The application's API jars come
# from ~/.m2 (java-extension fetches them). BENCH_JAVA_HOME picks the JDK (default: the one of
# JAVAC). No root. Never fails on the figures.
#   make bench-java-context [BENCH_JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64] \
#        [BENCH_JAVA_CONTEXT_ARGS="2000000 3"]

BENCH_JAVA_HOME ?= $(JAVA_HOME_OF_JAVAC)
BENCH_JAVA_CONTEXT_ARGS ?=
BENCH_JAVA_DIR = $(BUILD)/bench/java-context

.PHONY: bench-java-context
bench: bench-java-context

bench-java-context: java-extension
	$(Q)mkdir -p $(BENCH_JAVA_DIR)
	$(Q)$(BENCH_JAVA_HOME)/bin/javac -nowarn -cp $(JAVA_CP) -d $(BENCH_JAVA_DIR) \
		bench/spans/JavaContextBench.java
	$(Q)$(BENCH_JAVA_HOME)/bin/java -cp $(BENCH_JAVA_DIR):$(JAVA_CP) JavaContextBench $(abspath $(JAVA_AGENT_JAR)) \
		$(abspath $(JAVA_JAR)) $(BENCH_JAVA_DIR):$(JAVA_CP) $(BENCH_JAVA_CONTEXT_ARGS)
