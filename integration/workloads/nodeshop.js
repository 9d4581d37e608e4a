// A Node.js HTTP service instrumented with the OpenTelemetry JS SDK (@opentelemetry/sdk-node),
// for the Node.js span-link test (integration/test_span_node.py). Its active spans are published
// through the spanprof-context package (writer/node), wired exactly as docs/node.md shows; spans
// go by OTLP/HTTP to the Collector at OTEL_EXPORTER_OTLP_ENDPOINT.
//
// Three endpoints, each request's span held across async boundaries, CPU burnt before, between
// and after them in native functions of nodeburn.node named after the endpoint and the phase
// (checkout_before, ...), then <endpoint>_unspanned after the span ended:
//   checkout: async/await: a timer promise, then a setImmediate promise;
//   search:   a promise chain (.then) with a timer promise and a process.nextTick in it;
//   render:   callbacks: a setTimeout callback, then an fs callback (the I/O thread pool).
// A flow without any span burns outside_span. One client loop per endpoint (http.get, in this
// process) sends one request at a time, so at most one request of an endpoint is in flight.
//
// Usage: node nodeshop.js NODEBURN_NODE SECONDS
// Prints "ready PID", waits for a line on stdin, serves SECONDS, shuts the SDK down (its spans
// are exported), prints "done SPANS CPU_SECONDS REQUESTS".
'use strict';

// --- the wiring shown in docs/node.md ---
const { NodeSDK } = require('@opentelemetry/sdk-node');
const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-http');
const { BatchSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { resourceFromAttributes } = require('@opentelemetry/resources');
const spanprof = require('spanprof-context');

const resource = resourceFromAttributes({ 'service.name': 'node-shop' });
spanprof.publishProcess(resource);
const sdk = new NodeSDK({
  resource,
  contextManager: new spanprof.SpanprofContextManager(),
  spanProcessors: [
    new BatchSpanProcessor(new OTLPTraceExporter()),
    new spanprof.SpanprofSpanProcessor(),
  ],
});
sdk.start();
// --- end of the wiring ---

const api = require('@opentelemetry/api');
const fs = require('fs');
const http = require('http');

const burn = require(process.argv[2]);
const SECONDS = Number(process.argv[3]);
const ENDPOINTS = ['checkout', 'search', 'render'];
const BURN_US = 4000; // CPU per phase
const WAIT_MS = 2; // each timer inside a span
const PAUSE_MS = 20; // between two requests of one endpoint: its spans never touch
const tracer = api.trace.getTracer('nodeshop');
let ended = 0;
let mismatches = 0;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The package's own read-back: what this thread publishes is the active recording span.
function selfCheck() {
  const span = api.trace.getActiveSpan();
  const want = span && span.isRecording() ? span.spanContext().spanId : null;
  const rec = spanprof.current();
  if ((rec && rec.valid === 1 ? rec.spanId : null) !== want) mismatches++;
}

function finish(span) {
  selfCheck();
  span.end();
  ended++;
}

async function checkout() {
  await tracer.startActiveSpan('checkout', async (span) => {
    selfCheck();
    burn.checkout_before(BURN_US);
    await sleep(WAIT_MS);
    selfCheck();
    burn.checkout_between(BURN_US);
    await new Promise((r) => setImmediate(r));
    selfCheck();
    burn.checkout_after(BURN_US);
    finish(span);
  });
  selfCheck();
  burn.checkout_unspanned(BURN_US / 2);
}

function search() {
  return tracer.startActiveSpan('search', (span) => Promise.resolve()
    .then(() => { selfCheck(); burn.search_before(BURN_US); })
    .then(() => sleep(WAIT_MS))
    .then(() => { selfCheck(); burn.search_between(BURN_US); })
    .then(() => new Promise((r) => process.nextTick(r)))
    .then(() => { selfCheck(); burn.search_after(BURN_US); })
    .finally(() => finish(span)))
    .then(() => { selfCheck(); burn.search_unspanned(BURN_US / 2); });
}

function render() {
  return new Promise((resolve, reject) => {
    tracer.startActiveSpan('render', (span) => {
      selfCheck();
      burn.render_before(BURN_US);
      setTimeout(() => {
        selfCheck();
        burn.render_between(BURN_US);
        fs.stat(__filename, (err) => {
          selfCheck();
          burn.render_after(BURN_US);
          finish(span);
          if (err) reject(err);
          else setImmediate(() => { selfCheck(); burn.render_unspanned(BURN_US / 2); resolve(); });
        });
      }, WAIT_MS);
    });
  });
}

const HANDLERS = { checkout, search, render };

const server = http.createServer((req, res) => {
  const handler = HANDLERS[req.url.slice(1)];
  if (!handler) {
    res.writeHead(404).end();
    return;
  }
  handler().then(() => res.end('ok'), (e) => { res.writeHead(500).end(String(e)); });
});

function get(port, endpoint) {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path: `/${endpoint}`, agent: false }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(
        `${endpoint}: HTTP ${res.statusCode}`))));
    }).on('error', reject);
  });
}

async function client(port, endpoint, stop) {
  let n = 0;
  while (Date.now() < stop) {
    await get(port, endpoint);
    n++;
    await sleep(PAUSE_MS);
  }
  return n;
}

async function outside(stop) {
  while (Date.now() < stop) {
    selfCheck();
    burn.outside_span(2000);
    await sleep(5);
  }
}

server.listen(0, '127.0.0.1', () => {
  console.log(`ready ${process.pid}`);
  process.stdin.once('data', async () => {
    process.stdin.pause();
    const stop = Date.now() + SECONDS * 1000;
    const port = server.address().port;
    const counts = await Promise.all([...ENDPOINTS.map((ep) => client(port, ep, stop)),
      outside(stop)]);
    server.close();
    await sdk.shutdown();
    const cpu = process.cpuUsage();
    console.log(`done ${ended} ${((cpu.user + cpu.system) / 1e6).toFixed(3)} ` +
                `${counts.slice(0, ENDPOINTS.length).join(',')} mismatches=${mismatches}`);
  });
});
