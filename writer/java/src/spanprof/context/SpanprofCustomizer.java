// SPDX-License-Identifier: Apache-2.0
package spanprof.context;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.context.ContextStorage;
import io.opentelemetry.sdk.autoconfigure.spi.AutoConfigurationCustomizer;
import io.opentelemetry.sdk.autoconfigure.spi.AutoConfigurationCustomizerProvider;
import io.opentelemetry.sdk.resources.Resource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The extension's entry point, found by the OpenTelemetry Java agent (and by SDK
 * autoconfiguration) through META-INF/services: loads the native part and, when it loaded,
 * installs {@link SpanprofContextStorage} as a ContextStorage wrapper and publishes the SDK's
 * resource as the OTEP 4719 process context (service.name, ...; values as strings, lists joined
 * by ','), and adds {@link SpanprofProfileIdProcessor} (pyroscope.profile.id on every span, for
 * Grafana's traces-to-profiles; not with -Dspanprof.profile-id=false or SPANPROF_PROFILE_ID=false).
 * With -Dspanprof.enabled=false (or SPANPROF_JAVA_ENABLED=false) it does nothing.
 */
public final class SpanprofCustomizer implements AutoConfigurationCustomizerProvider {
  private static final Logger logger = Logger.getLogger("spanprof.context");

  @Override
  public void customize(AutoConfigurationCustomizer customizer) {
    String on = System.getProperty("spanprof.enabled", System.getenv("SPANPROF_JAVA_ENABLED"));
    if ("false".equalsIgnoreCase(on) || !Native.ok()) {
      return;
    }
    ContextStorage.addWrapper(SpanprofContextStorage::new);
    customizer.addResourceCustomizer(
        (resource, config) -> {
          publishProcess(resource);
          return resource;
        });
    if (SpanprofProfileIdProcessor.enabled()) {
      customizer.addTracerProviderCustomizer(
          (builder, config) -> builder.addSpanProcessor(new SpanprofProfileIdProcessor()));
    }
  }

  /** Runs after the other customizers (the resource it sees is the SDK's final one). */
  @Override
  public int order() {
    return Integer.MAX_VALUE;
  }

  static void publishProcess(Resource resource) {
    try {
      List<String> kv = new ArrayList<>();
      for (Map.Entry<AttributeKey<?>, Object> e : resource.getAttributes().asMap().entrySet()) {
        if (e.getValue() == null) {
          continue;
        }
        kv.add(e.getKey().getKey());
        kv.add(text(e.getValue()));
      }
      int rc = Native.publishProcess(kv.toArray(new String[0]), new String[0]);
      if (rc != 0) {
        logger.log(Level.WARNING, "spanprof: publishing the process context failed: " + rc);
      }
    } catch (Throwable t) {
      logger.log(Level.WARNING, "spanprof: publishing the process context failed: " + t);
    }
  }

  private static String text(Object v) {
    if (v instanceof List) {
      StringBuilder sb = new StringBuilder();
      for (Object o : (List<?>) v) {
        if (sb.length() > 0) {
          sb.append(',');
        }
        sb.append(o);
      }
      return sb.toString();
    }
    return String.valueOf(v);
  }
}
