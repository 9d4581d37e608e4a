# The OpenTelemetry Java agent extension (writer/java, docs/java.md): one jar,
#   $(BUILD)/writer/java/spanprof-java.jar
# holding the extension's classes (javac --release 8 against the OpenTelemetry API, the SDK's
# trace part (SpanProcessor) and the autoconfigure SPI from Maven Central, compile-only: the
# agent provides them) and its JNI part, libspanprof_java.so (writer/java/native/spanprof_jni.c
# + the writer library, -fPIC -mtls-dialect=gnu2), under spanprof/linux-x86_64/. Also the agent
# itself for the tests and the benchmark, $(BUILD)/java/opentelemetry-javaagent.jar. Maven puts
# the artifacts in ~/.m2 (`make deps` fetches them ahead; their class path is written to
# $(JAVA_DIR)/api.classpath for writer/java/test/ContextCheck.java); built by the test targets
# (check, integration) and by
#   make java-extension
# JAVAC picks the compiler; JAVA_JNI_HOME the JDK whose JNI headers the native part uses.

JAVAC ?= javac
JAR_TOOL ?= jar
MVN ?= mvn
JAVA_OTEL_VERSION := 1.67.0
JAVA_AGENT_VERSION := 2.33.1
JAVA_DIR := $(BUILD)/writer/java
JAVA_JAR := $(JAVA_DIR)/spanprof-java.jar
JAVA_AGENT_JAR := $(BUILD)/java/opentelemetry-javaagent.jar
JAVA_M2 := $(HOME)/.m2/repository
JAVA_CP_ARTIFACTS := \
	io/opentelemetry/opentelemetry-api/$(JAVA_OTEL_VERSION)/opentelemetry-api-$(JAVA_OTEL_VERSION).jar \
	io/opentelemetry/opentelemetry-context/$(JAVA_OTEL_VERSION)/opentelemetry-context-$(JAVA_OTEL_VERSION).jar \
	io/opentelemetry/opentelemetry-common/$(JAVA_OTEL_VERSION)/opentelemetry-common-$(JAVA_OTEL_VERSION).jar \
	io/opentelemetry/opentelemetry-sdk-common/$(JAVA_OTEL_VERSION)/opentelemetry-sdk-common-$(JAVA_OTEL_VERSION).jar \
	io/opentelemetry/opentelemetry-sdk-trace/$(JAVA_OTEL_VERSION)/opentelemetry-sdk-trace-$(JAVA_OTEL_VERSION).jar \
	io/opentelemetry/opentelemetry-sdk-extension-autoconfigure-spi/$(JAVA_OTEL_VERSION)/opentelemetry-sdk-extension-autoconfigure-spi-$(JAVA_OTEL_VERSION).jar
JAVA_CP := $(subst $(eval) ,:,$(addprefix $(JAVA_M2)/,$(JAVA_CP_ARTIFACTS)))
JAVA_SRC := $(wildcard writer/java/src/spanprof/context/*.java)
JAVA_HOME_OF_JAVAC = $(patsubst %/bin/javac,%,$(realpath $(shell command -v $(JAVAC))))
# JNI/JVMTI headers: those of a JDK 21+ when there is one (JVMTI 21: virtual threads; the ABI is
# stable, the library still loads in older JVMs), else the JDK of JAVAC (virtual threads left out).
JAVA_JNI_HOME ?= $(or $(patsubst %/include/jvmti.h,%,$(firstword $(shell grep -l JVMTI_VERSION_21 \
	$(JAVA_HOME_OF_JAVAC)/include/jvmti.h /usr/lib/jvm/*/include/jvmti.h 2>/dev/null))),$(JAVA_HOME_OF_JAVAC))
JAVA_JNI_CFLAGS = -I$(JAVA_JNI_HOME)/include -I$(JAVA_JNI_HOME)/include/linux

.PHONY: java-extension java-deps java-extension-for-tests
java-extension: $(JAVA_JAR) $(JAVA_AGENT_JAR) $(JAVA_DIR)/api.classpath

# The test targets build it, but a failure (no JDK, Maven Central unreachable) only fails the
# Java tests (integration/test_span_java.py says what is missing), not the whole run.
check integration: java-extension-for-tests
java-extension-for-tests:
	$(Q)$(MAKE) --no-print-directory java-extension || \
		echo "spanprof: the Java agent extension did not build: the Java span-link tests will fail" >&2

# Maven Central, through the machine's Maven (~/.m2/settings.xml if any): the API jars (with
# their dependencies) and the agent.
$(JAVA_DIR)/.deps-$(JAVA_OTEL_VERSION):
	$(call msg,MVN,opentelemetry-api $(JAVA_OTEL_VERSION))
	$(Q)mkdir -p $(@D)
	$(Q)for a in opentelemetry-api opentelemetry-sdk-common opentelemetry-sdk-trace \
			opentelemetry-sdk-extension-autoconfigure-spi; do \
		$(MVN) -q -B -Dmaven.repo.local=$(JAVA_M2) dependency:get -Dartifact=io.opentelemetry:$$a:$(JAVA_OTEL_VERSION) \
			>$(JAVA_DIR)/mvn.log 2>&1 || { cat $(JAVA_DIR)/mvn.log; exit 1; }; \
	done
	$(Q)touch $@

$(JAVA_AGENT_JAR):
	$(call msg,MVN,opentelemetry-javaagent $(JAVA_AGENT_VERSION))
	$(Q)mkdir -p $(@D)
	$(Q)$(MVN) -q -B -Dmaven.repo.local=$(JAVA_M2) dependency:get -Dtransitive=false \
		-Dartifact=io.opentelemetry.javaagent:opentelemetry-javaagent:$(JAVA_AGENT_VERSION) \
		>$(@D)/mvn.log 2>&1 || { cat $(@D)/mvn.log; exit 1; }
	$(Q)cp $(JAVA_M2)/io/opentelemetry/javaagent/opentelemetry-javaagent/$(JAVA_AGENT_VERSION)/opentelemetry-javaagent-$(JAVA_AGENT_VERSION).jar $@

java-deps: $(JAVA_DIR)/.deps-$(JAVA_OTEL_VERSION) $(JAVA_AGENT_JAR)

$(JAVA_DIR)/libspanprof_java.so: writer/java/native/spanprof_jni.c $(WRITER_SRC) $(WRITER_HDR)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(WRITER_CFLAGS) $(JAVA_JNI_CFLAGS) -I$(WRITER_INC) -shared \
		-Wl,-soname,libspanprof_java.so writer/java/native/spanprof_jni.c $(WRITER_SRC) -o $@

$(JAVA_JAR): $(JAVA_SRC) $(JAVA_DIR)/libspanprof_java.so $(JAVA_DIR)/.deps-$(JAVA_OTEL_VERSION) \
		writer/java/resources/META-INF/services/io.opentelemetry.sdk.autoconfigure.spi.AutoConfigurationCustomizerProvider
	$(call msg,JAR,$@)
	$(Q)rm -rf $(JAVA_DIR)/classes && mkdir -p $(JAVA_DIR)/classes/spanprof/linux-x86_64
	$(Q)$(JAVAC) -nowarn -Xlint:-options --release 8 -cp $(JAVA_CP) -d $(JAVA_DIR)/classes $(JAVA_SRC)
	$(Q)cp -r writer/java/resources/META-INF $(JAVA_DIR)/classes/
	$(Q)cp $(JAVA_DIR)/libspanprof_java.so $(JAVA_DIR)/classes/spanprof/linux-x86_64/
	$(Q)$(JAR_TOOL) --create --file $@.tmp -C $(JAVA_DIR)/classes . && mv $@.tmp $@

$(JAVA_DIR)/api.classpath: $(JAVA_DIR)/.deps-$(JAVA_OTEL_VERSION)
	$(Q)echo $(JAVA_CP) > $@
