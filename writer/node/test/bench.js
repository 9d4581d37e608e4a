// SPDX-License-Identifier: Apache-2.0
// Cost of publishing: the same loops with the SDK's AsyncLocalStorageContextManager and with
// SpanprofContextManager, in one run (same process, alternating rounds, best of each):
//   with:  context.with(ctx, fn) on a context holding a recording span (startActiveSpan's path);
//   await: an async function inside the span awaiting a resolved promise (one continuation:
//          the before/after hooks each publish and restore).
// Usage (where @opentelemetry/sdk-trace-base resolves): node test/bench.js [N]
'use strict';
const api = require('@opentelemetry/api');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const { BasicTracerProvider } = require('@opentelemetry/sdk-trace-base');
const spanprof = require('spanprof-context');

const N = Number(process.argv[2] || 200000);
const span = new BasicTracerProvider().getTracer('bench').startSpan('bench');
const ctx = api.trace.setSpan(api.ROOT_CONTEXT, span);
const noop = () => 0;

function timeWith(mgr) {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) mgr.with(ctx, noop);
  return Number(process.hrtime.bigint() - t0) / N;
}

async function timeAwait(mgr) {
  const n = N / 4;
  const t0 = process.hrtime.bigint();
  await mgr.with(ctx, async () => {
    for (let i = 0; i < n; i++) await null;
  });
  return Number(process.hrtime.bigint() - t0) / n;
}

async function main() {
  const best = { plain: [Infinity, Infinity], spanprof: [Infinity, Infinity] };
  for (let round = 0; round < 5; round++) {
    for (const [name, Mgr] of [['plain', AsyncLocalStorageContextManager],
      ['spanprof', spanprof.SpanprofContextManager]]) {
      const mgr = new Mgr().enable();
      best[name][0] = Math.min(best[name][0], timeWith(mgr));
      best[name][1] = Math.min(best[name][1], await timeAwait(mgr));
      mgr.disable();
    }
  }
  const [pw, pa] = best.plain;
  const [sw, sa] = best.spanprof;
  console.log(`node ${process.versions.node}: with() ${pw.toFixed(0)} ns plain, ${sw.toFixed(0)} ns ` +
              `publishing (x${(sw / pw).toFixed(2)}); await continuation ${pa.toFixed(0)} ns ` +
              `plain, ${sa.toFixed(0)} ns publishing (x${(sa / pa).toFixed(2)})`);
}

main();
