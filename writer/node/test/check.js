// SPDX-License-Identifier: Apache-2.0
// The package's own test (no root, no profiler): at many points of a program that interleaves
// requests through await, promise chains, timers, immediates, nextTick, queueMicrotask,
// EventEmitters, streams, sockets and worker-free thenables, what the thread publishes
// (otel_thread_ctx_v1 read back through the writer) must be the active recording span, or
// nothing. Run with the application's node_modules on NODE_PATH or from a directory where
// @opentelemetry/sdk-trace-base, @opentelemetry/api and this package resolve:
//   node test/check.js        prints "ok N checks" and exits 0, or the first mismatches, exit 1.
'use strict';
const api = require('@opentelemetry/api');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } =
  require('@opentelemetry/sdk-trace-base');
const net = require('net');
const { EventEmitter } = require('events');
const { Readable } = require('stream');
const { isMainThread, parentPort, Worker } = require('worker_threads');
const spanprof = require('spanprof-context');

const manager = new spanprof.SpanprofContextManager();
api.context.setGlobalContextManager(manager.enable());
if (manager.spanprofDisabledReason()) {
  console.log(`skip: ${manager.spanprofDisabledReason()}`);
  process.exit(0);
}
if (isMainThread) {
  // The process context (OTEP 4719): a mapping named OTEL_CTX.
  const rc = spanprof.publishProcess({ 'service.name': 'check', 'service.instance.id': 7 });
  const maps = require('fs').readFileSync('/proc/self/maps', 'utf8');
  if (rc !== 0 || !maps.includes('OTEL_CTX')) {
    console.log(`FAIL publishProcess: ${rc}, OTEL_CTX mapped: ${maps.includes('OTEL_CTX')}`);
    process.exit(1);
  }
}
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(exporter), new spanprof.SpanprofSpanProcessor()],
});
api.trace.setGlobalTracerProvider(provider);
const tracer = api.trace.getTracer('check');

let checks = 0;
const bad = [];
function check(where) {
  checks++;
  const span = api.trace.getSpan(api.context.active());
  const want = span && span.isRecording() ? span.spanContext().spanId : null;
  const rec = spanprof.current();
  const got = rec && rec.valid === 1 ? rec.spanId : null;
  if (want !== got && bad.length < 20) bad.push(`${where}: published ${got}, active ${want}`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const thenable = (v) => ({ then(res) { check('thenable.then'); res(v); } });

async function inner(name) {
  check(`${name} inner start`);
  await null;
  check(`${name} inner after await null`);
  await thenable(1);
  check(`${name} inner after thenable`);
  return tracer.startActiveSpan(`${name}.child`, async (child) => {
    check(`${name} child start`);
    await sleep(1);
    check(`${name} child after sleep`);
    child.end();
    check(`${name} child after end`);
  });
}

async function request(name, i) {
  check(`${name} before span`);
  await tracer.startActiveSpan(`${name}`, async (span) => {
    check(`${name} start`);
    await sleep(i % 3);
    check(`${name} after sleep`);
    await Promise.all([inner(name), sleep(1).then(() => check(`${name} then`))]);
    check(`${name} after all`);
    await new Promise((r) => setImmediate(() => { check(`${name} immediate`); r(); }));
    await new Promise((r) => process.nextTick(() => { check(`${name} nextTick`); r(); }));
    await new Promise((r) => queueMicrotask(() => { check(`${name} microtask`); r(); }));
    const ee = new EventEmitter();
    const got = new Promise((r) => ee.once('x', () => { check(`${name} emitter`); r(); }));
    setTimeout(() => ee.emit('x'), 1);
    await got;
    for await (const chunk of Readable.from(['a', 'b'])) {
      check(`${name} stream ${chunk}`);
    }
    await new Promise((resolve, reject) => {
      const sock = net.connect(server.address().port, '127.0.0.1', () => {
        check(`${name} connect`);
        sock.end('x');
      });
      sock.on('data', () => check(`${name} data`));
      sock.on('close', () => { check(`${name} close`); resolve(); });
      sock.on('error', reject);
    });
    check(`${name} before end`);
    span.end();
    check(`${name} after end`);
    await null;
    check(`${name} after end and await`);
  });
  check(`${name} after span`);
  setTimeout(() => check(`${name} timer after span`), 1);
}

const server = net.createServer((s) => {
  check('server connection');
  s.on('data', (d) => { check('server data'); s.end(d); });
});
server.listen(0, '127.0.0.1', async () => {
  check('listening');
  const work = [];
  for (let i = 0; i < 60; i++) work.push(request(`r${i}`, i));
  // Interleave a span-less flow too.
  work.push((async () => { for (let i = 0; i < 20; i++) { await sleep(1); check('unspanned'); } })());
  await Promise.all(work);
  await sleep(5);
  check('end');
  server.close();
  // pyroscope.profile.id (Grafana's traces-to-profiles): every span's own id; none when off.
  const spans = exporter.getFinishedSpans();
  if (spans.length < 120) bad.push(`only ${spans.length} spans exported`);
  for (const s of spans) {
    checks++;
    const id = s.attributes['pyroscope.profile.id'];
    if (id !== s.spanContext().spanId || !/^[0-9a-f]{16}$/.test(id)) {
      if (bad.length < 20) {
        bad.push(`${s.name}: pyroscope.profile.id ${id}, span ${s.spanContext().spanId}`);
      }
    }
  }
  const offExporter = new InMemorySpanExporter();
  const off = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(offExporter),
    new spanprof.SpanprofSpanProcessor({ profileId: false })] });
  off.getTracer('off').startSpan('off').end();
  checks++;
  const offSpans = offExporter.getFinishedSpans();
  if (offSpans.length !== 1 || 'pyroscope.profile.id' in offSpans[0].attributes) {
    bad.push(`profileId: false: ${JSON.stringify(offSpans.map((s) => s.attributes))}`);
  }
  const where = isMainThread ? 'main thread' : 'worker thread';
  if (bad.length) {
    console.log(`FAIL ${bad.length} of ${checks} checks (${where}):\n${bad.join('\n')}`);
    process.exit(1);
  }
  if (!isMainThread) {
    parentPort.postMessage(checks);
    return;
  }
  // The same program in a worker thread: its own thread, isolate and writer levels.
  const worker = new Worker(__filename);
  let workerChecks = 0;
  worker.on('message', (n) => { workerChecks = n; });
  worker.on('exit', (code) => {
    if (code !== 0 || !workerChecks) {
      console.log(`FAIL worker thread exited with ${code}`);
      process.exit(1);
    }
    console.log(`ok ${checks} checks (node ${process.versions.node}), ` +
                `${workerChecks} in a worker thread`);
  });
});
