// SPDX-License-Identifier: Apache-2.0
/*
 * spanprof-context: publishes, for spanprof, the OpenTelemetry span of the async context that is
 * running (OTEP 4947 thread context, through the writer library compiled into
 * build/spanprof_ctx.node) and the service's resource (OTEP 4719 process context).
 *
 * Invariant: whenever JavaScript runs on a thread, that thread's otel_thread_ctx_v1 holds the
 * recording span of the OpenTelemetry context that is active (context.active()), or nothing.
 * The active context changes in two ways, and both are followed:
 * - context.with(ctx, fn) (startActiveSpan, bind, instrumentations): SpanprofContextManager.with
 *   publishes ctx's span for the duration of the synchronous call and restores on the way out;
 * - an async continuation starts or ends (a promise reaction: the code after an `await`, a
 *   .then callback; a timer, an immediate, process.nextTick, an I/O or EventEmitter callback
 *   bound to an async resource): AsyncLocalStorage switches its store, and async_hooks runs its
 *   `before` hook just before the continuation and `after` right after it. Node switches the
 *   store before `before` and restores it after `after`, with async_hooks-based
 *   AsyncLocalStorage (Node 20, 22) and with AsyncContextFrame (Node 24 and later: timers and
 *   nextTick exchange the frame first, V8 sets a promise reaction's continuation data before
 *   its PromiseHook), so the hook publishes the span of the store the continuation runs with.
 *   `after` pops what `before` pushed (and anything left above it).
 * test/check.js checks this at many points of an interleaved program on each Node version; only
 * the major versions checked (VERIFIED_MAJORS) publish anything (no link beats a wrong link),
 * unless SPANPROF_CONTEXT_UNVERIFIED_NODE=1.
 * Only recording spans are published; SpanprofSpanProcessor (optional) unpublishes a span the
 * moment it ends, even in the middle of the synchronous code that ended it.
 */
'use strict';

const path = require('path');
const asyncHooks = require('async_hooks');
const { createRequire } = require('module');

// The peer dependencies, from this package's location or, when it is installed as a link (npm
// install <path> without --install-links: Node resolves from the link's target), from the
// application's (the main module's) node_modules.
function peer(name) {
  try {
    return require(name);
  } catch (e) {
    const main = require.main && require.main.filename;
    return createRequire(main || path.join(process.cwd(), 'index.js'))(name);
  }
}
const api = peer('@opentelemetry/api');
const { AsyncLocalStorageContextManager } = peer('@opentelemetry/context-async-hooks');

let addon = null;
let loadError = null;

/** Loads build/spanprof_ctx.node (or $SPANPROF_CTX_NODE) once; null (and loadError()) if not. */
function load() {
  if (addon || loadError) return addon;
  try {
    addon = require(process.env.SPANPROF_CTX_NODE ||
                    path.join(__dirname, 'build', 'spanprof_ctx.node'));
  } catch (e) {
    loadError = e;
    api.diag.warn(`spanprof-context: could not load the writer: ${e.message}`);
  }
  return addon;
}

/** Why this Node cannot publish spans, or null when it can. */
// Node.js majors on which test/check.js and integration/test_span_node.py passed (20, 22, 24, 26;
// the odd ones between them carry the same async context machinery).
const VERIFIED_MAJORS = [20, 21, 22, 23, 24, 25, 26];

function unsupported() {
  const major = Number(process.versions.node.split('.')[0]);
  if (!VERIFIED_MAJORS.includes(major) && process.env.SPANPROF_CONTEXT_UNVERIFIED_NODE !== '1') {
    return `Node.js ${process.versions.node}: how it switches async contexts is not verified ` +
           `(verified: ${VERIFIED_MAJORS[0]}-${VERIFIED_MAJORS[VERIFIED_MAJORS.length - 1]}; ` +
           'SPANPROF_CONTEXT_UNVERIFIED_NODE=1 publishes anyway)';
  }
  if (process.platform !== 'linux') return `${process.platform} is not supported (Linux only)`;
  if (!load()) return `the writer did not load: ${loadError && loadError.message}`;
  return null;
}

function recordingSpan(ctx) {
  if (!ctx) return null;
  const span = api.trace.getSpan(ctx);
  if (!span) return null;
  try {
    return span.isRecording() ? span : null;
  } catch (e) {
    return null;
  }
}

// span -> its ids as the writer takes them (trace_id[16] span_id[8] trace_flags), or null for an
// invalid span context: decoded once per span.
const spanIds = new WeakMap();

function idsOf(span) {
  let ids = spanIds.get(span);
  if (ids === undefined) {
    ids = null;
    try {
      const sc = span.spanContext();
      if (api.isSpanContextValid(sc)) {
        ids = new Uint8Array(25);
        ids.set(Buffer.from(sc.traceId + sc.spanId, 'hex'));
        ids[24] = sc.traceFlags & 0xff;
      }
    } catch (e) {
      ids = null;
    }
    spanIds.set(span, ids);
  }
  return ids;
}

function pushSpan(span) {
  return addon.push(span === null ? null : idsOf(span));
}

/**
 * An AsyncLocalStorageContextManager (from @opentelemetry/context-async-hooks) that also
 * publishes the active recording span of the running async context. Use it where the SDK takes a
 * context manager (NodeSDK's contextManager, or NodeTracerProvider.register({contextManager})).
 */
class SpanprofContextManager extends AsyncLocalStorageContextManager {
  constructor() {
    super();
    this._spanprofHook = null;
    this._spanprofOn = false;
    this._spanprofLevels = []; // per before/after pair: [writer depth or -1, span before it]
    this._spanprofCur = null; // the span this manager published last on this thread, or null
    this._spanprofWhy = null;
  }

  /** Why nothing is published (unsupported Node, the self-test failed), or null. */
  spanprofDisabledReason() {
    return this._spanprofOn ? null : this._spanprofWhy || 'not enabled';
  }

  // Publishes span as a new level unless it is the one published already; returns the level.
  _spanprofPush(span) {
    const prev = this._spanprofCur;
    if (span === prev) return [-1, prev];
    const d = pushSpan(span);
    this._spanprofCur = span;
    return [d, prev];
  }

  _spanprofPop(level) {
    if (level[0] >= 0) addon.popTo(level[0]);
    this._spanprofCur = level[1];
  }

  with(context, fn, thisArg, ...args) {
    if (!this._spanprofOn) return super.with(context, fn, thisArg, ...args);
    const level = this._spanprofPush(recordingSpan(context));
    try {
      return super.with(context, fn, thisArg, ...args);
    } finally {
      this._spanprofPop(level);
    }
  }

  enable() {
    super.enable();
    if (this._spanprofHook) return this;
    const why = unsupported();
    if (why) {
      this._spanprofWhy = why;
      api.diag.warn(`spanprof-context: publishing no spans: ${why}`);
      return this;
    }
    const levels = this._spanprofLevels;
    this._spanprofHook = asyncHooks.createHook({
      before: () => {
        if (this._spanprofOn) levels.push(this._spanprofPush(recordingSpan(this.active())));
        else levels.push(null);
      },
      after: () => {
        const level = levels.pop();
        if (level) this._spanprofPop(level);
      },
    });
    this._spanprofHook.enable();
    this._spanprofOn = true;
    return this;
  }

  disable() {
    if (this._spanprofHook) {
      this._spanprofHook.disable();
      this._spanprofHook = null;
    }
    this._spanprofOn = false;
    for (let level; (level = this._spanprofLevels.pop()) !== undefined;) {
      if (level) this._spanprofPop(level);
    }
    return super.disable();
  }
}

/**
 * A span processor (add it to the SDK's spanProcessors) that unpublishes a span when it ends:
 * CPU that the code which ended a span spends before its continuation returns is not linked to
 * the span (its samples would fall outside the span's time). The span is unpublished *before* the
 * SDK reads the clock for its end time (onStart wraps the span's end()): unpublishing from onEnd
 * alone would leave it published between its end time and the processor's turn, which on a
 * loaded machine (the thread preempted in between) was seen to be 5 ms.
 *
 * It also sets, at each span's start, the attribute pyroscope.profile.id = the span's own id (16
 * lowercase hex digits): Grafana's Tempo offers "Profiles for this span" only on spans that
 * carry it (docs/span-links.md). Every span, not only local roots as Grafana's pprof
 * integrations do (they label a root's whole subtree with the root's id): spanprof's samples
 * carry the id of the active span and Pyroscope's span selector matches ids exactly, so each
 * span's button shows the samples taken while it was active. Off with
 * new SpanprofSpanProcessor({ profileId: false }) or SPANPROF_PROFILE_ID=false; not set while
 * this package publishes nothing (no samples could match).
 */
const PROFILE_ID_KEY = 'pyroscope.profile.id';

class SpanprofSpanProcessor {
  constructor(options = {}) {
    this.profileId = options.profileId !== undefined ? !!options.profileId
      : String(process.env.SPANPROF_PROFILE_ID).toLowerCase() !== 'false';
  }

  onStart(span) {
    if (!addon) return;
    try {
      if (this.profileId) span.setAttribute(PROFILE_ID_KEY, span.spanContext().spanId);
    } catch (e) {
      // never break the application for a profiling aid
    }
    try {
      const end = span.end;
      const spanId = span.spanContext().spanId;
      if (typeof end !== 'function' || Object.prototype.hasOwnProperty.call(span, 'end')) return;
      span.end = function spanprofEnd(...args) {
        try {
          addon.spanEnded(spanId);
        } catch (e) {
          // never break the application for a profiling aid
        }
        return end.apply(this, args);
      };
    } catch (e) {
      // never break the application for a profiling aid
    }
  }

  onEnd(span) {
    if (!addon) return;
    try {
      addon.spanEnded(span.spanContext().spanId);
    } catch (e) {
      // never break the application for a profiling aid
    }
  }

  forceFlush() {
    return Promise.resolve();
  }

  shutdown() {
    return Promise.resolve();
  }
}

function text(v) {
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (Array.isArray(v)) return v.map(text).join(',');
  return String(v);
}

/**
 * Publishes (or updates) the process context (OTEP 4719): resource is an SDK Resource (its
 * attributes) or a plain object of attributes, e.g. {'service.name': 'checkout'}; values are
 * published as strings. attrKeys names the thread attribute key indexes (none are published by
 * this package today). Returns 0, or a negative errno (the writer's spctx_process_publish).
 */
function publishProcess(resource, attrKeys = []) {
  if (unsupported()) return -38; // -ENOSYS
  const attrs = (resource && resource.attributes) || resource || {};
  const kv = [];
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null) continue;
    kv.push(String(k), text(v));
  }
  return addon.publishProcess(kv, attrKeys.map(String));
}

/** Removes the process context. */
function unpublishProcess() {
  return load() ? addon.unpublishProcess() : 0;
}

/** The calling thread's published record, read back from otel_thread_ctx_v1 (tests, debugging):
 * null or {traceId, spanId, flags, valid}. */
function current() {
  return load() ? addon.current() : null;
}

module.exports = {
  SpanprofContextManager,
  SpanprofSpanProcessor,
  publishProcess,
  unpublishProcess,
  current,
  unsupported,
};
