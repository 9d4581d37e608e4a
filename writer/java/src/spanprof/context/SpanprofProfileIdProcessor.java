// SPDX-License-Identifier: Apache-2.0
package spanprof.context;

import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.context.Context;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.ReadWriteSpan;
import io.opentelemetry.sdk.trace.ReadableSpan;
import io.opentelemetry.sdk.trace.SpanProcessor;

/**
 * Sets, at each span's start, the attribute pyroscope.profile.id = the span's own id (16
 * lowercase hex digits, SpanContext.getSpanId()): Grafana's Tempo offers "Profiles for this span"
 * only on spans that carry it (docs/span-links.md). Every span, not only local roots as Grafana's
 * pprof integrations do (they label a root's whole subtree with the root's id): spanprof's samples
 * carry the id of the span active on the thread and Pyroscope's span selector matches ids exactly,
 * so each span's button shows the samples taken while it was the active span. Added by {@link
 * SpanprofCustomizer} unless -Dspanprof.profile-id=false (or SPANPROF_PROFILE_ID=false).
 */
public final class SpanprofProfileIdProcessor implements SpanProcessor {
  static final AttributeKey<String> PROFILE_ID = AttributeKey.stringKey("pyroscope.profile.id");

  /** Whether the customizer adds it: -Dspanprof.profile-id, else $SPANPROF_PROFILE_ID. */
  static boolean enabled() {
    String on = System.getProperty("spanprof.profile-id", System.getenv("SPANPROF_PROFILE_ID"));
    return !"false".equalsIgnoreCase(on);
  }

  @Override
  public void onStart(Context parentContext, ReadWriteSpan span) {
    span.setAttribute(PROFILE_ID, span.getSpanContext().getSpanId());
  }

  @Override
  public boolean isStartRequired() {
    return true;
  }

  @Override
  public void onEnd(ReadableSpan span) {}

  @Override
  public boolean isEndRequired() {
    return false;
  }

  @Override
  public CompletableResultCode shutdown() {
    return CompletableResultCode.ofSuccess();
  }

  @Override
  public CompletableResultCode forceFlush() {
    return CompletableResultCode.ofSuccess();
  }
}
