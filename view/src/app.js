/*
 * spanprof view: the page. Reads the JSON document embedded in #spanprof-data (format:
 * docs/view-format.md, "spanprof-view/1"), aggregates the rows that pass the filters into a
 * call tree and draws it with d3-flame-graph. No network, no storage: everything is in the page.
 *
 * Stable element ids and classes (tests and users' scripts may rely on them):
 *   #title, #summary               document title, sample count and generation time
 *   #error                         fatal problem (no data, unreadable document); #notice: a warning
 *   #profile-types                 one button.ptype[data-index][aria-pressed] per profile type
 *   #filter-service, #filter-process, #filter-thread   <select>s; value "" = all, else an index
 *   #group-process                 checkbox: a frame per process below the stacks (default on)
 *   #timeline                      bucket histogram (svg; drag to select a range), #time-range
 *                                  (text), #time-reset (back to all time)
 *   #selection, #selection-text, #clear-selection      "showing span X ... clear" banner
 *   #search, #search-result        search box and "N% of samples match"
 *   #reset-zoom, #zoom-info        zoom reset and the zoomed frame
 *   #shown-total                   total of the flame graph shown
 *   #legend                        frame types of the graph shown: span.legend-item[data-type]
 *                                  (the profile.frame.type value) with a span.swatch
 *   #flamegraph                    the graph: svg g.frame[name] per frame; #empty when nothing
 *   #frame-tooltip                 hover tooltip (.tt-name, .tt-loc, .tt-module, .tt-value)
 *   #details                       one-line description of the hovered frame
 *   #spans-box                     the span list, hidden when the document has no span
 *   #spans                         span table: tbody tr.span-row[data-span-id][data-trace-id]
 *                                  (.selected), a.span-link (text: "name (service) duration"
 *                                  in td.span-name with div.span-id when a traces file names
 *                                  the span, else the span id), a.trace-link, td.count;
 *                                  th[data-sort] sorts; #span-filter, #span-more, #span-count
 *   #inputs-box, #inputs           inputs: li.input (li.input.failed + .input-error on error)
 *
 * Test API, window.spanprofView (set once the first render is done; `error` is the fatal
 * message or null):
 *   ready                  true
 *   rootValue()            total value of the flame graph (all filters applied, zoom ignored)
 *   visibleFrames()        distinct names of the frames drawn in the current graph (zoom
 *                          respected; root "all", frames under MIN_FRAME_PX and those past
 *                          MAX_DRAWN left out), root-first order
 *   highlightedFrames()    distinct names of the frames the search highlights
 *   selectSpan(spanId)     shows that span only (like clicking its row); null clears
 *   selectTrace(traceId)   shows that trace's spans; null clears
 *   search(text)           highlights; returns the matched share of the shown total (0..1)
 *   setProfileType(nameOrIndex), profileTypes(): [{name, sample_type, unit}], profileType()
 *   setFilter("service"|"process"|"thread", index|null), setTimeRange(fromBucket, toBucket)
 *   spans(): the span table's rows [{trace_id, span_id, name, label, attrs, process, count}],
 *                          all pages; name/label null when no traces file names the span
 *   selection(): {span_id, trace_id, spans} or null
 *   zoomTo(name): zooms on the first frame of that name; resetZoom()
 *   frameTypes(): {name: type} of the frames drawn (process frames and "all" left out)
 *   frameColour(type, name): the fill a frame of that type and name gets
 *   frameTypeStyles(): FRAME_TYPES (label, base, spread per type) and "other": OTHER_TYPE
 *   timings(): milliseconds spent in each step of the last refresh (tree, tree_by_process:
 *   building the call trees, only when that refresh built them)
 */
(function () {
	"use strict";

	const DATA_FORMAT = "spanprof-view/1";
	const MIN_FRAME_PX = 1; // frames narrower than this are not drawn
	const MAX_DRAWN = 3000; // at most this many frames in the graph (SVG gets slow past that)
	const SPAN_PAGE = 200; // span table rows rendered per "show more"
	// frames.kind -> frame type, for documents without frames.type (docs/view-format.md)
	const KIND_TYPE = ["native", "kernel", "jit", "abort", "go", "cpython"];
	/*
	 * Colour families of the frame types (OTLP profile.frame.type): a frame's colour is
	 * base + spread * (a hash of its name), per channel, so that neighbours differ and a
	 * function keeps its colour; the legend shows base + spread / 2. Native, kernel, Go and
	 * JIT are those of flamegraph.svg. Types not listed get OTHER_TYPE.
	 */
	const FRAME_TYPES = {
		native: { label: "native", base: [205, 70, 0], spread: [50, 160, 40] },
		kernel: { label: "kernel", base: [80, 160, 215], spread: [60, 50, 40] },
		go: { label: "Go", base: [30, 170, 150], spread: [50, 50, 40] },
		cpython: { label: "Python", base: [225, 185, 30], spread: [25, 45, 40] },
		php: { label: "PHP", base: [100, 110, 195], spread: [40, 40, 50] },
		v8js: { label: "JavaScript (V8)", base: [120, 200, 40], spread: [40, 40, 30] },
		jvm: { label: "Java (JVM)", base: [40, 150, 60], spread: [40, 50, 40] },
		dotnet: { label: ".NET", base: [130, 80, 200], spread: [40, 40, 40] },
		jit: { label: "JIT (other)", base: [140, 160, 100], spread: [30, 30, 30] },
		abort: { label: "stack cut here", base: [240, 170, 170], spread: [0, 0, 0] },
	};
	const OTHER_TYPE = { label: "other", base: [150, 150, 150], spread: [40, 40, 40] };
	const typeStyle = (t) => FRAME_TYPES[t] || { ...OTHER_TYPE, label: t || OTHER_TYPE.label };

	const $ = (id) => document.getElementById(id);

	/* ---------------------------------------------------------------- formatting */

	const nf = new Intl.NumberFormat("en-US");

	function fmtDuration(ns) {
		const a = Math.abs(ns);
		if (a >= 1e9) return (ns / 1e9).toFixed(a >= 1e11 ? 0 : 2) + " s";
		if (a >= 1e6) return (ns / 1e6).toFixed(a >= 1e8 ? 0 : 2) + " ms";
		if (a >= 1e3) return (ns / 1e3).toFixed(a >= 1e5 ? 0 : 2) + " µs";
		return Math.round(ns) + " ns";
	}

	function fmtBytes(b) {
		const units = ["B", "KiB", "MiB", "GiB", "TiB"];
		let i = 0;
		while (Math.abs(b) >= 1024 && i < units.length - 1) {
			b /= 1024;
			i++;
		}
		return (i ? b.toFixed(b >= 100 ? 0 : 1) : String(Math.round(b))) + " " + units[i];
	}

	function fmtPct(x) {
		const p = 100 * x;
		if (p === 0) return "0%";
		if (p >= 10) return p.toFixed(1) + "%";
		if (p >= 0.1) return p.toFixed(2) + "%";
		return p.toPrecision(2) + "%";
	}

	/* What a value of profile type `t` means, in words. */
	function fmtValue(t, v) {
		const unit = (t && t.unit) || "count";
		if (unit === "nanoseconds") return fmtDuration(v);
		if (unit === "bytes") return fmtBytes(v);
		const what = t && t.sample_type ? t.sample_type : "samples";
		return nf.format(Math.round(v)) + " " + what;
	}

	function unitWords(t) {
		const unit = (t && t.unit) || "count";
		if (unit === "nanoseconds") return "time";
		if (unit === "bytes") return "bytes";
		return t && t.sample_type ? t.sample_type : "samples";
	}

	function el(tag, attrs, ...children) {
		const e = document.createElement(tag);
		for (const [k, v] of Object.entries(attrs || {})) {
			if (v === null || v === undefined || v === false) continue;
			if (k === "class") e.className = v;
			else if (k === "text") e.textContent = v;
			else e.setAttribute(k, v === true ? "" : v);
		}
		for (const c of children) if (c !== null && c !== undefined) e.append(c);
		return e;
	}

	/* ---------------------------------------------------------------- the document */

	class DocError extends Error {}

	/* A column of the document as a typed array; missing or short columns are errors. */
	function column(obj, key, n, Type) {
		const a = obj && obj[key];
		if (!Array.isArray(a)) throw new DocError(`column ${key} is missing`);
		if (n >= 0 && a.length !== n)
			throw new DocError(`column ${key} has ${a.length} entries, expected ${n}`);
		return Type.from(a);
	}

	/*
	 * The model: typed columns plus derived indices, built once. Frames are merged into
	 * "functions" (same name, file, module and kind; lines may differ) so that one function
	 * is one box per call path, as in flamegraph.pl.
	 */
	function buildModel(doc) {
		const S = Array.isArray(doc.strings) ? doc.strings : [];
		const str = (i) => (i > 0 && i < S.length ? String(S[i]) : "");
		const fr = doc.frames || {};
		const nFrames = Array.isArray(fr.name) ? fr.name.length : 0;
		const frames = {
			name: column(fr, "name", nFrames, Int32Array),
			file: column(fr, "file", nFrames, Int32Array),
			line: column(fr, "line", nFrames, Int32Array),
			module: column(fr, "module", nFrames, Int32Array),
			kind: column(fr, "kind", nFrames, Int32Array),
			// optional (older documents): string index of the frame type, 0 unknown
			type: Array.isArray(fr.type) ? column(fr, "type", nFrames, Int32Array) : new Int32Array(nFrames),
		};
		// Functions: distinct (name, file, module, kind, type).
		const funcOf = new Int32Array(nFrames);
		const funcKey = new Map();
		const func = { name: [], file: [], module: [], kind: [], type: [] };
		for (let i = 0; i < nFrames; i++) {
			const key =
				frames.name[i] +
				"," +
				frames.file[i] +
				"," +
				frames.module[i] +
				"," +
				frames.kind[i] +
				"," +
				frames.type[i];
			let f = funcKey.get(key);
			if (f === undefined) {
				f = func.name.length;
				funcKey.set(key, f);
				func.name.push(str(frames.name[i]) || "[unknown]");
				func.file.push(frames.file[i]);
				func.module.push(frames.module[i]);
				func.kind.push(frames.kind[i]);
				func.type.push(str(frames.type[i]) || KIND_TYPE[frames.kind[i]] || "");
			}
			funcOf[i] = f;
		}
		// Stacks, flattened: frames of stack s are stackFrames[stackOff[s] .. stackOff[s+1]).
		const st = Array.isArray(doc.stacks) ? doc.stacks : [];
		const stackOff = new Int32Array(st.length + 1);
		let total = 0;
		for (let s = 0; s < st.length; s++) {
			total += Array.isArray(st[s]) ? st[s].length : 0;
			stackOff[s + 1] = total;
		}
		const stackFrames = new Int32Array(total);
		let bad = 0;
		for (let s = 0, k = 0; s < st.length; s++) {
			for (const f of st[s] || []) {
				const ok = Number.isInteger(f) && f >= 0 && f < nFrames;
				if (!ok) bad++;
				stackFrames[k++] = ok ? f : -1;
			}
		}
		const types = Array.isArray(doc.profile_types) ? doc.profile_types : [];
		const services = (doc.services || []).map((i) => str(i) || "[unknown service]");
		const pr = doc.processes || {};
		const nProcs = Array.isArray(pr.pid) ? pr.pid.length : 0;
		const procs = {
			pid: column(pr, "pid", nProcs, Float64Array),
			name: column(pr, "name", nProcs, Int32Array),
			service: column(pr, "service", nProcs, Int32Array),
		};
		const th = doc.threads || {};
		const nThreads = Array.isArray(th.tid) ? th.tid.length : 0;
		const threads = {
			process: column(th, "process", nThreads, Int32Array),
			tid: column(th, "tid", nThreads, Float64Array),
			name: column(th, "name", nThreads, Int32Array),
		};
		const sp = doc.spans || {};
		const nSpans = Array.isArray(sp.span_id) ? sp.span_id.length : 0;
		const spans = {
			trace_id: (sp.trace_id || []).map((x) => String(x || "").toLowerCase()),
			span_id: (sp.span_id || []).map((x) => String(x || "").toLowerCase()),
			attrs: (sp.attrs || []).map((a) => (a && typeof a === "object" ? a : {})),
			process: column(sp, "process", nSpans, Int32Array),
		};
		if (spans.trace_id.length !== nSpans || spans.attrs.length !== nSpans)
			throw new DocError("the span columns have different lengths");
		// Optional (traces files read with the profiles): name, service, duration; a column
		// that is missing or of the wrong length counts as unknown everywhere.
		const optCol = (key) =>
			Array.isArray(sp[key]) && sp[key].length === nSpans ? sp[key].map((x) => Number(x) || 0) : null;
		const sName = optCol("name");
		const sService = optCol("service");
		const sDur = optCol("duration_ns");
		spans.name = Array.from({ length: nSpans }, (_, i) => (sName ? str(sName[i]) : ""));
		spans.service = Array.from({ length: nSpans }, (_, i) => (sService ? str(sService[i]) : ""));
		spans.duration = Float64Array.from({ length: nSpans }, (_, i) => (sDur ? sDur[i] : 0));
		const rw = doc.rows || {};
		const nRows = Array.isArray(rw.value) ? rw.value.length : 0;
		const rows = {
			n: nRows,
			type: column(rw, "type", nRows, Int32Array),
			stack: column(rw, "stack", nRows, Int32Array),
			thread: column(rw, "thread", nRows, Int32Array),
			span: column(rw, "span", nRows, Int32Array),
			bucket: column(rw, "bucket", nRows, Int32Array),
			value: column(rw, "value", nRows, Float64Array),
		};
		// Out-of-range references become "unknown" rather than breaking the page.
		let badRows = 0;
		for (let r = 0; r < nRows; r++) {
			if (rows.thread[r] >= nThreads || rows.thread[r] < -1) (rows.thread[r] = -1), badRows++;
			if (rows.span[r] >= nSpans || rows.span[r] < -1) (rows.span[r] = -1), badRows++;
			if (rows.stack[r] < 0 || rows.stack[r] >= st.length) (rows.stack[r] = -1), badRows++;
		}
		for (let t = 0; t < nThreads; t++)
			if (threads.process[t] < 0 || threads.process[t] >= nProcs) threads.process[t] = -1;
		for (let p = 0; p < nProcs; p++)
			if (procs.service[p] < 0 || procs.service[p] >= services.length) procs.service[p] = -1;
		const time = doc.time || {};
		const buckets = Math.max(0, Math.floor(Number(time.buckets) || 0));
		const spanById = new Map();
		const spansOfTrace = new Map();
		for (let i = 0; i < nSpans; i++) {
			const a = spanById.get(spans.span_id[i]);
			a ? a.push(i) : spanById.set(spans.span_id[i], [i]);
			const b = spansOfTrace.get(spans.trace_id[i]);
			b ? b.push(i) : spansOfTrace.set(spans.trace_id[i], [i]);
		}
		return {
			str,
			frames,
			funcOf,
			func,
			stackOff,
			stackFrames,
			nStacks: st.length,
			types,
			services,
			procs,
			nProcs,
			threads,
			nThreads,
			spans,
			nSpans,
			spanById,
			spansOfTrace,
			rows,
			time: {
				start: Number(time.start_unix_ns) || 0,
				bucket: Number(time.bucket_ns) || 0,
				buckets,
			},
			inputs: Array.isArray(doc.inputs) ? doc.inputs : [],
			title: typeof doc.title === "string" ? doc.title : "spanprof",
			generated: Number(doc.generated_unix_ns) || 0,
			initial: doc.initial || {},
			problems: bad + badRows ? [`${bad + badRows} bad references ignored`] : [],
		};
	}

	/* ---------------------------------------------------------------- call tree */

	/*
	 * A prefix tree of the stacks of one profile type, built once per type and grouping mode:
	 * node 0 is the root, a child's id is always greater than its parent's (so totals add up in
	 * one backward pass), and each row of that type maps to the node where its stack ends.
	 * Children are found through an open-addressing hash table on typed arrays (a Map keyed by
	 * (parent, function) numbers took seconds on a million nodes).
	 */
	class Trie {
		constructor(hashed, cap = 1024) {
			this.n = 1;
			this.parent = new Int32Array(cap);
			this.func = new Int32Array(cap); // function id (-1 unknown), -(process index + 3): process
			this.frame = new Int32Array(cap); // first frame merged here (for file:line)
			this.parent[0] = -1;
			this.func[0] = -1;
			this.frame[0] = -1;
			this.lines = new Map(); // node -> Set of lines, when frames with different lines merged
			this.orig = null; // Int32Array: node -> node of `base` whose lines it shows, or null
			this.base = null;
			let size = 4096;
			while (size < 2 * cap) size *= 2;
			this.table = hashed ? new Int32Array(size).fill(-1) : null;
		}

		/* The set of lines merged into node i (null: just its frame's line). */
		linesOf(i) {
			return this.base ? this.base.lines.get(this.orig[i]) || null : this.lines.get(i) || null;
		}

		grow() {
			const cap = this.parent.length * 2;
			for (const k of this.orig ? ["parent", "func", "frame", "orig"] : ["parent", "func", "frame"]) {
				const a = new Int32Array(cap);
				a.set(this[k]);
				this[k] = a;
			}
		}

		/* Appends a node with no lookup (the caller knows it is new). */
		add(p, fn, frame) {
			if (this.n === this.parent.length) this.grow();
			const c = this.n++;
			this.parent[c] = p;
			this.func[c] = fn;
			this.frame[c] = frame;
			return c;
		}

		slot(p, fn) {
			return (Math.imul(p, 0x9e3779b1) ^ Math.imul(fn + 3, 0x85ebca77)) & (this.table.length - 1);
		}

		rehash() {
			const cap = this.table.length * 2;
			this.table = new Int32Array(cap).fill(-1);
			const mask = cap - 1;
			for (let c = 1; c < this.n; c++) {
				let h = this.slot(this.parent[c], this.func[c]);
				while (this.table[h] >= 0) h = (h + 1) & mask;
				this.table[h] = c;
			}
		}

		child(p, fn, frame, lineOf) {
			// fn >= -1: a function (-1 unknown); fn <= -2: process -(fn + 3) (-1 unknown).
			const table = this.table;
			const mask = table.length - 1;
			let h = this.slot(p, fn);
			let c;
			while ((c = table[h]) >= 0) {
				if (this.parent[c] === p && this.func[c] === fn) break;
				h = (h + 1) & mask;
			}
			if (c < 0) {
				c = this.add(p, fn, frame);
				table[h] = c;
				if (this.n * 2 > table.length) this.rehash();
			} else if (frame >= 0 && frame !== this.frame[c]) {
				const l0 = lineOf(this.frame[c]);
				const l1 = lineOf(frame);
				if (l0 !== l1) {
					let s = this.lines.get(c);
					if (!s) this.lines.set(c, (s = new Set([l0])));
					if (s.size < 16) s.add(l1);
				}
			}
			return c;
		}
	}

	/* Trie + per-row leaf for a type, stacks only (no process frames). */
	function buildStackTrie(M, type) {
		const T = new Trie(true, M.stackFrames.length + 1); // at most a node per stack frame
		const lineOf = (f) => M.frames.line[f];
		const rowLeaf = new Int32Array(M.rows.n);
		const stackLeaf = new Int32Array(M.nStacks + 1).fill(-1); // stack + 1 -> leaf
		const { stackOff, stackFrames, funcOf } = M;
		for (let r = 0; r < M.rows.n; r++) {
			if (M.rows.type[r] !== type) continue;
			const s = M.rows.stack[r];
			let leaf = stackLeaf[s + 1];
			if (leaf < 0) {
				let node = 0;
				if (s >= 0) {
					for (let k = stackOff[s]; k < stackOff[s + 1]; k++) {
						const f = stackFrames[k];
						node = f < 0 ? T.child(node, -1, -1, lineOf) : T.child(node, funcOf[f], f, lineOf);
					}
				}
				leaf = stackLeaf[s + 1] = node;
			}
			rowLeaf[r] = leaf;
		}
		T.table = null; // only needed while building
		return { T, rowLeaf };
	}

	/*
	 * Trie + per-row leaf for a type and grouping mode (true: a process frame above stacks).
	 * Grouped by process, the tree is the stack trie copied under each process node, for the
	 * nodes that process's rows reach: node (process, stack-trie node) is made once, walking up
	 * from a row's leaf only until a node already made, so the work is the size of the result.
	 */
	function buildTrie(M, type, byProcess) {
		const plain = trie(type, false);
		if (!byProcess) return plain;
		const P = plain.T;
		const T = new Trie(false);
		T.orig = new Int32Array(T.parent.length);
		T.orig[0] = 0;
		T.base = P;
		const rowLeaf = new Int32Array(M.rows.n);
		// Rows of this type grouped by process (index + 1; 0: unknown), in row order.
		const nP = M.nProcs + 1;
		const procOfRow = (r) => {
			const t = M.rows.thread[r];
			return t >= 0 ? M.threads.process[t] + 1 : 0;
		};
		const start = new Int32Array(nP + 1);
		for (let r = 0; r < M.rows.n; r++) if (M.rows.type[r] === type) start[procOfRow(r) + 1]++;
		for (let p = 0; p < nP; p++) start[p + 1] += start[p];
		const order = new Int32Array(start[nP]);
		const fill = start.slice(0, nP);
		for (let r = 0; r < M.rows.n; r++) if (M.rows.type[r] === type) order[fill[procOfRow(r)]++] = r;
		const map = new Int32Array(P.n).fill(-1); // stack-trie node -> node, for one process
		const touched = [];
		const path = [];
		for (let p = 0; p < nP; p++) {
			if (start[p] === start[p + 1]) continue;
			const pn = T.add(0, -(p - 1 + 3), -1);
			T.orig[pn] = 0;
			map[0] = pn;
			for (let k = start[p]; k < start[p + 1]; k++) {
				const r = order[k];
				let x = plain.rowLeaf[r];
				if (map[x] < 0) {
					path.length = 0;
					for (; map[x] < 0; x = P.parent[x]) path.push(x);
					let node = map[x];
					for (let j = path.length - 1; j >= 0; j--) {
						const y = path[j];
						node = T.add(node, P.func[y], P.frame[y]); // grows T.orig too
						T.orig[node] = y;
						map[y] = node;
						touched.push(y);
					}
					x = plain.rowLeaf[r];
				}
				rowLeaf[r] = map[x];
			}
			for (const y of touched) map[y] = -1;
			touched.length = 0;
		}
		return { T, rowLeaf };
	}

	/* ---------------------------------------------------------------- state */

	const state = {
		type: 0,
		service: -1, // -1: all
		process: -1,
		thread: -1,
		t0: 0, // bucket range [t0, t1); the full range includes rows without a timestamp
		t1: 0,
		sel: null, // {spans: [index...], span_id, trace_id} or null
		search: "",
		byProcess: true,
		spanSort: { key: "count", desc: true },
		spanFilter: "",
		spanShown: SPAN_PAGE,
	};

	let M = null; // the model
	const tries = new Map(); // "type/byProcess" -> {T, rowLeaf}
	let chart = null; // d3-flame-graph chart
	let current = null; // last aggregation: see aggregate(); tree and focus: what is drawn
	let spanRows = []; // span table rows (indices into M.spans), sorted and filtered
	let timeline = null;

	function trie(type = state.type, byProcess = state.byProcess) {
		const k = type + "/" + byProcess;
		if (!tries.has(k))
			tries.set(
				k,
				byProcess
					? timed("tree_by_process", () => buildTrie(M, type, true))
					: timed("tree", () => buildStackTrie(M, type)),
			);
		return tries.get(k);
	}

	function fullTime() {
		return state.t0 <= 0 && state.t1 >= M.time.buckets;
	}

	/*
	 * One pass over the rows: the flame graph's node values (every filter), each span's total
	 * (every filter but the span) and each time bucket's total (every filter but time).
	 */
	function aggregate() {
		const { rows, threads, procs } = M;
		const { T, rowLeaf } = trie();
		const threadOk = new Uint8Array(M.nThreads + 1);
		const anyThread = state.service < 0 && state.process < 0 && state.thread < 0;
		threadOk[0] = anyThread ? 1 : 0;
		for (let t = 0; t < M.nThreads; t++) {
			const p = threads.process[t];
			const s = p >= 0 ? procs.service[p] : -1;
			threadOk[t + 1] =
				(state.thread < 0 || state.thread === t) &&
				(state.process < 0 || state.process === p) &&
				(state.service < 0 || state.service === s)
					? 1
					: 0;
		}
		const spanOk = new Uint8Array(M.nSpans + 1);
		if (state.sel) for (const i of state.sel.spans) spanOk[i + 1] = 1;
		else spanOk.fill(1);
		const all = fullTime();
		const t0 = state.t0;
		const t1 = state.t1;
		const nodeVal = new Float64Array(T.n);
		const spanTotals = new Float64Array(M.nSpans);
		const bucketTotals = new Float64Array(M.time.buckets);
		const type = state.type;
		const { value, bucket, span, thread } = rows;
		for (let r = 0; r < rows.n; r++) {
			if (rows.type[r] !== type || !threadOk[thread[r] + 1]) continue;
			const v = value[r];
			const b = bucket[r];
			const sp = span[r];
			const inTime = all || (b >= t0 && b < t1);
			const inSpan = spanOk[sp + 1] === 1;
			if (inSpan && b >= 0 && b < bucketTotals.length) bucketTotals[b] += v;
			if (!inTime) continue;
			if (sp >= 0) spanTotals[sp] += v;
			if (inSpan) nodeVal[rowLeaf[r]] += v;
		}
		// Self values -> totals (children have larger ids than their parents).
		for (let i = T.n - 1; i > 0; i--) if (nodeVal[i]) nodeVal[T.parent[i]] += nodeVal[i];
		return { T, val: nodeVal, total: nodeVal[0], spanTotals, bucketTotals, tree: null, focus: 0 };
	}

	function nodeName(T, i) {
		const fn = T.func[i];
		if (i === 0) return "all";
		if (fn <= -2) return procLabel(-fn - 3);
		return fn < 0 ? "[unknown frame]" : M.func.name[fn];
	}

	/*
	 * The library's input, {name, value (inclusive), children, id, ...}, for the nodes worth
	 * drawing: a graph of half a million nodes would take seconds to lay out, and a frame
	 * narrower than MIN_FRAME_PX is not drawn anyway. Nodes below that share of the total are
	 * left out, and if more than MAX_DRAWN remain, the smallest of them too (their width then
	 * shows as their parent's own time). Zoomed on `focus` (a trie node), the tree is the path
	 * to it and its subtree, with the share taken of the focus's value: the library hides
	 * everything else when zoomed.
	 */
	function makeTree(T, val, focus) {
		const thr = (focus > 0 ? val[focus] : val[0]) * (MIN_FRAME_PX / graphWidth());
		const keep = new Uint8Array(T.n); // 2: the root and the path to the focus, 1: candidate
		for (let i = focus; i > 0; i = T.parent[i]) keep[i] = 2;
		keep[0] = 2;
		let count = 0;
		for (let i = 1; i < T.n; i++) {
			const p = T.parent[i];
			if (keep[i] || !keep[p] || !val[i] || val[i] < thr) continue;
			if (keep[p] === 2 && p !== focus) continue; // beside the path: hidden when zoomed
			keep[i] = 1;
			count++;
		}
		let cut = 0;
		if (count > MAX_DRAWN) {
			const vals = new Float64Array(count);
			for (let i = 1, k = 0; i < T.n; i++) if (keep[i] === 1) vals[k++] = val[i];
			vals.sort();
			cut = vals[count - MAX_DRAWN];
		}
		const objs = new Array(T.n);
		const root = { name: "all", value: val[0], children: [], id: 0 };
		objs[0] = root;
		for (let i = 1; i < T.n; i++) {
			if (!keep[i] || (keep[i] === 1 && val[i] < cut)) continue;
			const parent = objs[T.parent[i]];
			if (!parent) continue;
			const fn = T.func[i];
			const o = { name: nodeName(T, i), value: val[i], children: [], id: i, t: "" };
			if (fn <= -2) o.proc = -fn - 3;
			else if (fn >= 0) o.t = M.func.type[fn];
			objs[i] = o;
			parent.children.push(o);
		}
		return root;
	}

	function procLabel(p) {
		if (p < 0) return "[unknown process]";
		const name = M.str(M.procs.name[p]) || "?";
		return `${name} [${M.procs.pid[p]}]`;
	}

	function procLong(p) {
		if (p < 0) return "unknown process";
		const s = M.procs.service[p];
		return procLabel(p) + (s >= 0 ? ` (${M.services[s]})` : "");
	}

	function threadLabel(t) {
		const name = M.str(M.threads.name[t]) || "?";
		return `${name} (${M.threads.tid[t]})`;
	}

	function currentType() {
		return M.types[state.type] || { name: "?", unit: "count" };
	}

	/* ---------------------------------------------------------------- flame graph */

	function tooltip() {
		const box = $("frame-tooltip");
		function tip() {} // d3-flame-graph calls svg.call(tooltip) once
		tip.show = function (event, d) {
			box.replaceChildren(...describe(d));
			box.hidden = false;
			const pad = 12;
			const r = box.getBoundingClientRect();
			let x = event.clientX + pad;
			let y = event.clientY + pad;
			if (x + r.width > window.innerWidth) x = Math.max(0, event.clientX - r.width - pad);
			if (y + r.height > window.innerHeight) y = Math.max(0, event.clientY - r.height - pad);
			box.style.left = x + window.scrollX + "px";
			box.style.top = y + window.scrollY + "px";
			return tip;
		};
		tip.hide = function () {
			box.hidden = true;
			return tip;
		};
		return tip;
	}

	/* Tooltip lines for a node: name, file:line, module, value and share. */
	function describe(d) {
		const data = d.data;
		const t = currentType();
		const total = current ? current.total : 0;
		const out = [el("div", { class: "tt-name", text: data.name })];
		const T = current.T;
		if (data.proc !== undefined) {
			const p = data.proc;
			out.push(el("div", { class: "tt-loc", text: "process " + procLong(p) }));
		} else if (data.id > 0 && T.func[data.id] >= 0) {
			const fn = T.func[data.id];
			const frame = T.frame[data.id];
			const file = M.str(M.func.file[fn]);
			const lines = T.linesOf(data.id);
			const line = frame >= 0 ? M.frames.line[frame] : 0;
			let loc = file;
			if (lines) {
				const ls = [...lines].filter((x) => x > 0).sort((a, b) => a - b);
				if (ls.length) loc = `${file || "?"}:${ls.join(", ")}`;
			} else if (line > 0) {
				loc = `${file || "?"}:${line}`;
			}
			out.push(el("div", { class: "tt-loc", text: loc || "no source line" }));
			const mod = M.str(M.func.module[fn]);
			const kind = typeStyle(M.func.type[fn]).label;
			out.push(el("div", { class: "tt-module", text: (mod || "no module") + " · " + kind }));
		}
		let v = fmtValue(t, data.value);
		if (t.unit === "count" && t.period_unit === "nanoseconds" && t.period > 0)
			v += ` (≈ ${fmtDuration(data.value * t.period)})`;
		const pct = total > 0 ? fmtPct(data.value / total) : "0%";
		out.push(el("div", { class: "tt-value", text: `${v} · ${pct} of the shown total` }));
		return out;
	}

	function label(d) {
		const total = current ? current.total : 0;
		const pct = total > 0 ? fmtPct(d.data.value / total) : "";
		return `${d.data.name} — ${fmtValue(currentType(), d.data.value)} (${pct})`;
	}

	function graphWidth() {
		return Math.max(300, $("graph-box").clientWidth - 2);
	}

	/* 32-bit FNV-1a of a frame's name: its place in its type's colour family. */
	function nameHash(s) {
		let h = 0x811c9dc5;
		for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
		return h;
	}

	function rgb(c) {
		return `rgb(${c.map((x) => Math.round(x)).join(",")})`;
	}

	/* The fill of a frame of type `type` named `name`. */
	function frameColour(type, name) {
		const f = typeStyle(type);
		const h = nameHash(name);
		return rgb(f.base.map((b, i) => b + (f.spread[i] * ((h >>> (8 * i)) & 0xff)) / 255));
	}

	/* The legend: one swatch per frame type in the graph shown, in FRAME_TYPES order. */
	function renderLegend(tree) {
		const seen = new Set();
		(function walk(n) {
			if (n.t) seen.add(n.t);
			for (const c of n.children) walk(c);
		})(tree || { children: [] });
		const order = Object.keys(FRAME_TYPES);
		const types = [...seen].sort((a, b) => {
			const ia = order.indexOf(a) < 0 ? order.length : order.indexOf(a);
			const ib = order.indexOf(b) < 0 ? order.length : order.indexOf(b);
			return ia - ib || a.localeCompare(b);
		});
		$("legend").replaceChildren(
			...types.map((t) => {
				const f = typeStyle(t);
				const sw = el("span", { class: "swatch" });
				sw.style.background = rgb(f.base.map((b, i) => b + f.spread[i] / 2));
				return el("span", { class: "legend-item", "data-type": t, title: t }, sw, f.label);
			}),
		);
	}

	function makeChart() {
		const fg = window.flamegraph.default;
		chart = fg()
			.width(graphWidth())
			.cellHeight(18)
			.minHeight(120)
			.transitionDuration(250)
			.minFrameSize(MIN_FRAME_PX)
			.sort(true)
			.resetHeightOnZoom(true)
			.tooltip(tooltip())
			.setLabelHandler(label)
			.setDetailsElement($("details"))
			.setSearchMatch((d, term) => {
				if (!term) return false;
				return d.data.name.toLowerCase().includes(term.toLowerCase());
			})
			.setSearchHandler(() => {})
			.setColorMapper((d, color) => {
				if (d.highlight) return color;
				if (d.depth === 0) return "#c9c9c9";
				if (d.data.proc !== undefined) return "#b5c3d9";
				return frameColour(d.data.t, d.data.name);
			})
			.onClick(onZoom);
	}

	/*
	 * After the library zoomed on d: rebuild the tree with the detail that is now wide enough
	 * to draw below d (or without it, back at the root) and zoom on d's new node.
	 */
	function onZoom(d) {
		const zoomed = d && d.depth > 0;
		const focus = zoomed ? d.data.id : 0;
		$("zoom-info").textContent = zoomed ? "zoomed to " + d.data.name : "";
		$("reset-zoom").disabled = !zoomed;
		if (!current || focus === current.focus) return;
		rebuild(focus);
	}

	/* Redraws current's tree for the graph's width, zoomed on trie node `focus` (0: none). */
	function rebuild(focus) {
		$("frame-tooltip").hidden = true; // its frame moved
		current.focus = focus;
		current.tree = makeTree(current.T, current.val, focus);
		chart.update(current.tree);
		applySearch();
		if (focus) {
			const n = hierarchyRoot().find((x) => x.data.id === focus);
			if (n) chart.zoomTo(n); // calls onZoom again, with focus === current.focus
		}
	}

	function hierarchyRoot() {
		const n = d3.select("#flamegraph").datum();
		return n && n.descendants ? n : null;
	}

	/* Draws current.tree; keeps the search term. */
	function draw() {
		const empty = !current || current.total <= 0;
		$("empty").hidden = !empty;
		$("flamegraph").hidden = empty;
		$("zoom-info").textContent = "";
		$("reset-zoom").disabled = true;
		const t = currentType();
		$("shown-total").textContent = empty
			? ""
			: `${fmtValue(t, current.total)} shown` + (t.name ? ` · ${t.name}` : "");
		if (empty) {
			renderLegend(null);
			updateSearchResult();
			return;
		}
		chart.height(null);
		current.focus = 0;
		current.tree = makeTree(current.T, current.val, 0);
		renderLegend(current.tree);
		if (!hierarchyRoot()) d3.select("#flamegraph").datum(current.tree).call(chart);
		else chart.update(current.tree);
		applySearch();
	}

	/*
	 * Matched share of the shown total, over every node (drawn or too narrow to draw): nodes
	 * that match and have no matching ancestor, so that nothing is counted twice.
	 */
	function searchShare(term) {
		if (!term || !current || current.total <= 0) return 0;
		const q = term.toLowerCase();
		const { T, val } = current;
		const memo = new Map(); // function (or process) code -> matches
		const under = new Uint8Array(T.n); // node matches or has a matching ancestor
		let sum = 0;
		for (let i = 1; i < T.n; i++) {
			if (!val[i]) continue;
			if (under[T.parent[i]]) {
				under[i] = 1;
				continue;
			}
			const fn = T.func[i];
			let m = memo.get(fn);
			if (m === undefined) memo.set(fn, (m = nodeName(T, i).toLowerCase().includes(q)));
			if (m) {
				under[i] = 1;
				sum += val[i];
			}
		}
		return sum / current.total;
	}

	function applySearch() {
		if (current && current.total > 0 && hierarchyRoot()) {
			if (state.search) chart.search(state.search);
			else chart.clear();
		}
		updateSearchResult();
	}

	function updateSearchResult() {
		const out = $("search-result");
		if (!state.search) {
			out.textContent = "";
			return 0;
		}
		const share = searchShare(state.search);
		out.textContent = `${fmtPct(share)} of ${unitWords(currentType())} match`;
		out.classList.toggle("nomatch", share === 0);
		return share;
	}

	/* ---------------------------------------------------------------- controls */

	function renderTypes() {
		const box = $("profile-types");
		const names = M.types.map((t) => t.name);
		box.replaceChildren(
			...M.types.map((t, i) => {
				const dup = names.indexOf(t.name) !== names.lastIndexOf(t.name);
				const text = dup ? `${t.name}: ${t.sample_type}` : t.name || t.sample_type || "?";
				const b = el("button", {
					type: "button",
					class: "ptype",
					"data-index": String(i),
					"data-name": t.name || "",
					title: `${t.sample_type || "?"} (${t.unit || "?"})`,
					text,
				});
				b.addEventListener("click", () => setType(i));
				return b;
			}),
		);
		markType();
	}

	function markType() {
		for (const b of document.querySelectorAll("#profile-types .ptype"))
			b.setAttribute("aria-pressed", String(Number(b.dataset.index) === state.type));
		$("span-count-header").textContent = unitWords(currentType());
	}

	function fillSelect(sel, allText, items, value) {
		const opts = [el("option", { value: "", text: allText })];
		for (const [v, text] of items) opts.push(el("option", { value: String(v), text }));
		sel.replaceChildren(...opts);
		sel.value = value < 0 ? "" : String(value);
	}

	function renderFilters() {
		fillSelect(
			$("filter-service"),
			`all services (${M.services.length})`,
			M.services.map((s, i) => [i, s]),
			state.service,
		);
		const procs = [];
		for (let p = 0; p < M.nProcs; p++)
			if (state.service < 0 || M.procs.service[p] === state.service) procs.push([p, procLong(p)]);
		if (state.process >= 0 && !procs.some(([p]) => p === state.process)) state.process = -1;
		fillSelect($("filter-process"), `all processes (${procs.length})`, procs, state.process);
		const threads = [];
		for (let t = 0; t < M.nThreads; t++) {
			const p = M.threads.process[t];
			if (state.process >= 0 && p !== state.process) continue;
			if (state.service < 0 || (p >= 0 && M.procs.service[p] === state.service))
				threads.push([t, threadLabel(t) + (state.process < 0 ? " · " + procLabel(p) : "")]);
		}
		if (state.thread >= 0 && !threads.some(([t]) => t === state.thread)) state.thread = -1;
		fillSelect($("filter-thread"), `all threads (${threads.length})`, threads, state.thread);
	}

	function setType(i) {
		if (i < 0 || i >= M.types.length) return;
		state.type = i;
		markType();
		refresh();
	}

	function setFilter(which, v) {
		v = v === null || v === undefined || v === "" ? -1 : Number(v);
		if (which === "service") {
			state.service = v;
			state.process = -1;
			state.thread = -1;
		} else if (which === "process") {
			state.process = v;
			state.thread = -1;
		} else if (which === "thread") {
			state.thread = v;
		} else {
			throw new Error("unknown filter " + which);
		}
		renderFilters();
		refresh();
	}

	/* ---------------------------------------------------------------- timeline */

	function bucketLabel(b) {
		const secs = (b * M.time.bucket) / 1e9;
		return "+" + (secs < 10 ? secs.toFixed(2) : secs.toFixed(1)) + " s";
	}

	function renderTimeRange() {
		const box = $("time-range");
		if (!M.time.buckets) {
			box.textContent = "the inputs have no timestamps";
			$("time-reset").hidden = true;
			return;
		}
		const start = new Date(M.time.start / 1e6);
		const span = `${bucketLabel(state.t0)} – ${bucketLabel(state.t1)}`;
		const whole = `of ${bucketLabel(M.time.buckets).slice(1)} from ${fmtDate(start)}`;
		box.textContent = fullTime() ? `all (${whole.slice(3)})` : `${span} ${whole}`;
		$("time-reset").hidden = fullTime();
	}

	function fmtDate(d) {
		return isNaN(d) ? "?" : d.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
	}

	function makeTimeline() {
		const box = $("timeline");
		if (!M.time.buckets) {
			box.hidden = true;
			return null;
		}
		const height = 56;
		const svg = d3.select(box).append("svg").attr("class", "timeline").attr("height", height + 18);
		const bars = svg.append("g").attr("class", "bars");
		const axis = svg.append("g").attr("class", "axis").attr("transform", `translate(0,${height})`);
		const brushG = svg.append("g").attr("class", "brush");
		const tl = { svg, bars, axis, brushG, height, x: null, brush: null };
		tl.brush = d3.brushX().on("end", (ev) => {
			if (!ev.sourceEvent) return; // moved by this code
			if (!ev.selection) return setTimeRange(0, M.time.buckets);
			const b0 = Math.max(0, Math.floor(tl.x.invert(ev.selection[0])));
			const b1 = Math.min(M.time.buckets, Math.max(b0 + 1, Math.ceil(tl.x.invert(ev.selection[1]))));
			setTimeRange(b0, b1);
		});
		return tl;
	}

	function layoutTimeline() {
		const tl = timeline;
		if (!tl) return;
		const w = graphWidth();
		tl.svg.attr("width", w);
		tl.x = d3.scaleLinear().domain([0, M.time.buckets]).range([0, w]);
		tl.brush.extent([
			[0, 0],
			[w, tl.height],
		]);
		tl.brushG.call(tl.brush);
		tl.axis.call(
			d3
				.axisBottom(tl.x)
				.ticks(Math.min(10, Math.floor(w / 90)))
				.tickFormat((b) => bucketLabel(b).slice(1)),
		);
		drawTimeline();
	}

	function drawTimeline() {
		const tl = timeline;
		if (!tl || !current) return;
		const vals = Array.from(current.bucketTotals);
		const max = Math.max(1, ...vals);
		const bw = Math.max(1, tl.x(1) - tl.x(0) - (M.time.buckets < 80 ? 1 : 0));
		tl.bars
			.selectAll("rect")
			.data(vals)
			.join("rect")
			.attr("x", (_, i) => tl.x(i))
			.attr("width", bw)
			.attr("y", (v) => tl.height - (v / max) * (tl.height - 4))
			.attr("height", (v) => (v / max) * (tl.height - 4))
			.attr("class", (_, i) => (i >= state.t0 && i < state.t1 ? "in" : "out"));
		if (fullTime()) tl.brushG.call(tl.brush.move, null);
		else tl.brushG.call(tl.brush.move, [tl.x(state.t0), tl.x(state.t1)]);
	}

	function setTimeRange(b0, b1) {
		const n = M.time.buckets;
		b0 = Math.max(0, Math.min(n, Math.floor(Number(b0) || 0)));
		b1 = Math.max(b0, Math.min(n, Math.floor(Number(b1))));
		if (!(b1 > b0)) (b0 = 0), (b1 = n);
		state.t0 = b0;
		state.t1 = b1;
		refresh();
	}

	/* ---------------------------------------------------------------- spans */

	/*
	 * "name (service) duration" of span @i from the traces files, each part only when known
	 * (the service from the traces, else from the span's process); "" when the span has no name.
	 */
	function spanLabel(i) {
		const name = M.spans.name[i];
		if (!name) return "";
		const p = M.spans.process[i];
		const s = M.spans.service[i] || (p >= 0 && M.procs.service[p] >= 0 ? M.services[M.procs.service[p]] : "");
		const d = M.spans.duration[i];
		return name + (s ? ` (${s})` : "") + (d > 0 ? " " + fmtDuration(d) : "");
	}

	function attrText(a) {
		return Object.entries(a)
			.map(([k, v]) => `${k}=${v}`)
			.join(" ");
	}

	function sortSpans() {
		const totals = current.spanTotals;
		const q = state.spanFilter.toLowerCase();
		const sel = new Set(state.sel ? state.sel.spans : []);
		const idx = [];
		for (let i = 0; i < M.nSpans; i++) {
			if (!totals[i] && !sel.has(i)) continue;
			if (q) {
				const hay = (
					M.spans.trace_id[i] +
					" " +
					M.spans.span_id[i] +
					" " +
					spanLabel(i) +
					" " +
					attrText(M.spans.attrs[i]) +
					" " +
					procLong(M.spans.process[i])
				).toLowerCase();
				if (!hay.includes(q)) continue;
			}
			idx.push(i);
		}
		const { key, desc } = state.spanSort;
		const cmpStr = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
		const keyOf = {
			count: (i) => totals[i],
			trace: (i) => M.spans.trace_id[i],
			span: (i) => (M.spans.name[i] ? "0" + spanLabel(i) : "1" + M.spans.span_id[i]), // named first
			process: (i) => procLong(M.spans.process[i]),
			attrs: (i) => attrText(M.spans.attrs[i]),
		}[key];
		const keys = idx.map(keyOf);
		const order = idx.map((_, k) => k);
		order.sort((a, b) => {
			const c = key === "count" ? keys[a] - keys[b] : cmpStr(keys[a], keys[b]);
			return (desc ? -c : c) || idx[a] - idx[b];
		});
		spanRows = order.map((k) => idx[k]);
	}

	function renderSpans() {
		sortSpans();
		const t = currentType();
		const tbody = document.querySelector("#spans tbody");
		const sel = new Set(state.sel ? state.sel.spans : []);
		const shown = spanRows.slice(0, state.spanShown);
		tbody.replaceChildren(
			...shown.map((i) => {
				const tid = M.spans.trace_id[i];
				const sid = M.spans.span_id[i];
				const attrs = el("td", { class: "attrs" });
				const label = spanLabel(i);
				const link = el("a", { class: "span-link", href: "#span=" + sid, title: "show this span", text: label || sid });
				const spanCell = label
					? el("td", { class: "span-name" }, link, el("div", { class: "id span-id", text: sid }))
					: el("td", { class: "id" }, link);
				for (const [k, v] of Object.entries(M.spans.attrs[i]))
					attrs.append(el("span", { class: "attr" }, el("b", { text: k }), "=" + v), " ");
				return el(
					"tr",
					{
						class: "span-row" + (sel.has(i) ? " selected" : ""),
						"data-span-id": sid,
						"data-trace-id": tid,
						"data-index": String(i),
					},
					el(
						"td",
						{ class: "id" },
						el("a", { class: "trace-link", href: "#trace=" + tid, title: "show this trace", text: tid }),
					),
					spanCell,
					procCell(M.spans.process[i]),
					attrs,
					el("td", { class: "num count", text: fmtValue(t, current.spanTotals[i]) }),
				);
			}),
		);
		const withSamples = current.spanTotals.reduce((n, v) => n + (v > 0 ? 1 : 0), 0);
		$("span-count").textContent =
			`${nf.format(withSamples)} of ${nf.format(M.nSpans)} spans have ${unitWords(t)} here` +
			(state.spanFilter ? ` · ${nf.format(spanRows.length)} match the filter` : "");
		const more = $("span-more");
		more.hidden = spanRows.length <= state.spanShown;
		more.textContent = `show ${Math.min(SPAN_PAGE, spanRows.length - state.spanShown)} more`;
		for (const th of document.querySelectorAll("#spans th[data-sort]")) {
			const on = th.dataset.sort === state.spanSort.key;
			th.classList.toggle("sorted", on);
			th.setAttribute("aria-sort", on ? (state.spanSort.desc ? "descending" : "ascending") : "none");
		}
	}

	function procCell(p) {
		const s = p >= 0 ? M.procs.service[p] : -1;
		return el(
			"td",
			{ class: "proc" },
			p >= 0 ? procLabel(p) : "unknown process",
			s >= 0 ? el("div", { class: "service", text: M.services[s] }) : null,
		);
	}

	function onSpanTableClick(ev) {
		const row = ev.target.closest("tr.span-row");
		if (!row) return;
		if (ev.target.closest("a") && (ev.ctrlKey || ev.metaKey || ev.shiftKey)) return; // new tab
		ev.preventDefault();
		if (ev.target.closest("a.trace-link")) selectTrace(row.dataset.traceId, true);
		else selectSpan(row.dataset.spanId, true, row.dataset.traceId);
	}

	/* ---------------------------------------------------------------- selection and URL */

	function describeSelection() {
		const box = $("selection");
		const sel = state.sel;
		box.hidden = !sel;
		if (!sel) return;
		const text = $("selection-text");
		if (sel.span_id) {
			const i = sel.spans[0];
			const attrs = attrText(M.spans.attrs[i]);
			const label = spanLabel(i);
			text.replaceChildren(
				"Showing span ",
				label ? el("b", { class: "span-name", text: label }) : "",
				label ? " " : "",
				el("code", { text: sel.span_id }),
				" of trace ",
				el("code", { text: M.spans.trace_id[i] }),
				attrs ? ` (${attrs})` : "",
				" — ",
			);
		} else {
			text.replaceChildren(
				"Showing trace ",
				el("code", { text: sel.trace_id }),
				`: ${sel.spans.length} span${sel.spans.length === 1 ? "" : "s"} — `,
			);
		}
	}

	function notice(msg) {
		const n = $("notice");
		n.textContent = msg || "";
		n.hidden = !msg;
	}

	/*
	 * Finds the spans for (spanId, traceId) (either may be null); null when neither is given;
	 * {missing: text} when nothing matches.
	 */
	function resolve(spanId, traceId) {
		spanId = spanId ? String(spanId).toLowerCase() : null;
		traceId = traceId ? String(traceId).toLowerCase() : null;
		if (!spanId && !traceId) return null;
		let spans;
		if (spanId) {
			spans = (M.spanById.get(spanId) || []).filter(
				(i) => !traceId || M.spans.trace_id[i] === traceId,
			);
			if (!spans.length) return { missing: `span ${spanId}` };
			return { spans, span_id: spanId, trace_id: M.spans.trace_id[spans[0]] };
		}
		spans = M.spansOfTrace.get(traceId) || [];
		if (!spans.length) return { missing: `trace ${traceId}` };
		return { spans, span_id: null, trace_id: traceId };
	}

	function fragmentOf(sel) {
		if (!sel) return "";
		return sel.span_id ? "#span=" + sel.span_id : "#trace=" + sel.trace_id;
	}

	function writeFragment(sel, replace) {
		const frag = fragmentOf(sel);
		if (location.hash === frag || (!frag && !location.hash)) return;
		const url = location.href.replace(/#.*$/, "") + frag;
		try {
			if (replace) history.replaceState(null, "", url);
			else history.pushState(null, "", url);
		} catch (e) {
			location.hash = frag; // our hashchange handler sees the state already matches
		}
	}

	/*
	 * Applies a selection (from resolve()). push: write it into the URL fragment (a new history
	 * entry, or "replace" to rewrite the current one).
	 */
	function applySelection(sel, push, source) {
		if (sel && sel.missing) {
			notice(`The ${sel.missing} (${source}) is not in this profile: showing everything.`);
			sel = null;
		} else {
			notice("");
		}
		state.sel = sel;
		state.spanShown = SPAN_PAGE;
		describeSelection();
		if (push) writeFragment(sel, push === "replace");
		refresh();
	}

	function selectSpan(spanId, push = true, traceId = null) {
		applySelection(resolve(spanId, traceId), push, "selected");
	}

	function selectTrace(traceId, push = true) {
		applySelection(resolve(null, traceId), push, "selected");
	}

	function parseFragment() {
		const h = location.hash.replace(/^#/, "");
		if (!h) return null;
		const p = new URLSearchParams(h);
		return { span: p.get("span"), trace: p.get("trace") };
	}

	/* The user edited the fragment or went back: follow it unless it is what is shown. */
	function onFragment() {
		const f = parseFragment();
		const sel = f ? resolve(f.span, f.trace) : null;
		if (!(sel && sel.missing) && fragmentOf(sel) === fragmentOf(state.sel)) return;
		applySelection(sel, false, "from the link");
	}

	/* ---------------------------------------------------------------- top */

	const timings = {}; // ms spent in each step of the last refresh

	function timed(name, fn) {
		const t0 = performance.now();
		const r = fn();
		timings[name] = Math.round(performance.now() - t0);
		return r;
	}

	function refresh() {
		delete timings.tree;
		delete timings.tree_by_process;
		current = timed("aggregate", aggregate);
		timed("draw", draw);
		timed("spans", renderSpans);
		timed("timeline", () => {
			renderTimeRange();
			drawTimeline();
		});
	}

	function renderHeader() {
		document.title = M.title;
		$("title").textContent = M.title;
		const t = M.types.length ? M.types.map((x) => x.name).join(", ") : "no profile types";
		const when = M.generated ? " · generated " + fmtDate(new Date(M.generated / 1e6)) : "";
		$("summary").textContent =
			`${nf.format(M.rows.n)} rows · ${nf.format(M.nSpans)} spans · ${t}${when}` +
			M.problems.map((p) => " · " + p).join("");
	}

	function renderInputs() {
		const ul = $("inputs");
		let failed = 0;
		ul.replaceChildren(
			...M.inputs.map((inp) => {
				const err = inp && inp.error;
				if (err) failed++;
				return el(
					"li",
					{ class: "input" + (err ? " failed" : "") },
					el("code", { class: "input-path", text: String(inp.path || "?") }),
					` ${inp.format || "?"}`,
					Number.isFinite(inp.samples) ? ` · ${nf.format(inp.samples)} samples` : "",
					err ? el("div", { class: "input-error", text: String(err) }) : null,
				);
			}),
		);
		$("inputs-summary").textContent =
			`${M.inputs.length} input${M.inputs.length === 1 ? "" : "s"}` +
			(failed ? ` · ${failed} could not be read` : "");
		$("inputs-box").open = failed > 0;
		$("inputs-box").classList.toggle("has-errors", failed > 0);
	}

	function wire() {
		$("filter-service").addEventListener("change", (e) => setFilter("service", e.target.value));
		$("filter-process").addEventListener("change", (e) => setFilter("process", e.target.value));
		$("filter-thread").addEventListener("change", (e) => setFilter("thread", e.target.value));
		$("group-process").addEventListener("change", (e) => {
			state.byProcess = e.target.checked;
			refresh();
		});
		$("time-reset").addEventListener("click", () => setTimeRange(0, M.time.buckets));
		$("clear-selection").addEventListener("click", () => applySelection(null, true, ""));
		$("reset-zoom").addEventListener("click", () => chart && hierarchyRoot() && chart.resetZoom());
		let timer = 0;
		$("search").addEventListener("input", (e) => {
			clearTimeout(timer);
			timer = setTimeout(() => search(e.target.value), 120);
		});
		$("search").addEventListener("keydown", (e) => {
			if (e.key === "Escape") {
				e.target.value = "";
				search("");
			}
		});
		document.addEventListener("keydown", (e) => {
			if (e.key === "/" && document.activeElement === document.body) {
				e.preventDefault();
				$("search").focus();
			}
		});
		document.querySelector("#spans tbody").addEventListener("click", onSpanTableClick);
		for (const th of document.querySelectorAll("#spans th[data-sort]")) {
			th.addEventListener("click", () => {
				const key = th.dataset.sort;
				const s = state.spanSort;
				state.spanSort = { key, desc: s.key === key ? !s.desc : key === "count" };
				renderSpans();
			});
		}
		let ftimer = 0;
		$("span-filter").addEventListener("input", (e) => {
			clearTimeout(ftimer);
			ftimer = setTimeout(() => {
				state.spanFilter = e.target.value.trim();
				state.spanShown = SPAN_PAGE;
				renderSpans();
			}, 150);
		});
		$("span-more").addEventListener("click", () => {
			state.spanShown += SPAN_PAGE;
			renderSpans();
		});
		window.addEventListener("hashchange", onFragment);
		window.addEventListener("popstate", onFragment);
		let rtimer = 0;
		window.addEventListener("resize", () => {
			clearTimeout(rtimer);
			rtimer = setTimeout(() => {
				const w = graphWidth();
				if (!chart || w === chart.width()) return; // a change of height changes nothing
				chart.width(w);
				if (current && current.total > 0 && hierarchyRoot()) rebuild(current.focus);
				layoutTimeline();
			}, 150);
		});
	}

	function search(text) {
		state.search = String(text || "");
		if ($("search").value !== state.search) $("search").value = state.search;
		applySearch();
		return searchShare(state.search);
	}

	function distinctNames(pred) {
		const root = hierarchyRoot();
		if (!root || !current || current.total <= 0) return [];
		const seen = new Set();
		for (const d of root.descendants()) if (d.depth > 0 && d.value > 0 && pred(d)) seen.add(d.data.name);
		return [...seen];
	}

	function api(error) {
		window.spanprofView = {
			ready: true,
			error: error || null,
			rootValue: () => (current ? current.total : 0),
			visibleFrames: () => distinctNames(() => true),
			highlightedFrames: () => distinctNames((d) => d.highlight),
			selectSpan: (id) => selectSpan(id),
			selectTrace: (id) => selectTrace(id),
			search,
			setProfileType: (t) => setType(typeof t === "number" ? t : M.types.findIndex((x) => x.name === t)),
			profileTypes: () => M.types.map(({ name, sample_type, unit }) => ({ name, sample_type, unit })),
			profileType: () => currentType().name,
			setFilter,
			setTimeRange,
			spans: () =>
				spanRows.map((i) => ({
					trace_id: M.spans.trace_id[i],
					span_id: M.spans.span_id[i],
					name: M.spans.name[i] || null,
					label: spanLabel(i) || null,
					attrs: M.spans.attrs[i],
					process: procLong(M.spans.process[i]),
					count: current.spanTotals[i],
				})),
			selection: () =>
				state.sel
					? { span_id: state.sel.span_id, trace_id: state.sel.trace_id, spans: state.sel.spans.length }
					: null,
			zoomTo: (name) => {
				const root = hierarchyRoot();
				const d = root && root.descendants().find((n) => n.data.name === name && n.value > 0);
				if (d) chart.zoomTo(d);
				return !!d;
			},
			resetZoom: () => hierarchyRoot() && chart.resetZoom(),
			frameTypes: () => {
				const out = {};
				const root = hierarchyRoot();
				for (const n of root ? root.descendants() : [])
					if (n.depth > 0 && n.value > 0 && n.data.t) out[n.data.name] = n.data.t;
				return out;
			},
			frameColour,
			frameTypeStyles: () => ({ ...FRAME_TYPES, other: OTHER_TYPE }),
			timings: () => ({ ...timings }),
		};
	}

	function fatal(msg) {
		const e = $("error");
		e.textContent = msg;
		e.hidden = false;
		$("summary").textContent = "";
		api(msg);
	}

	function start() {
		const holder = $("spanprof-data");
		let doc;
		try {
			doc = JSON.parse(holder.textContent);
		} catch (e) {
			return fatal("The profile embedded in this page is not valid JSON: " + e.message);
		}
		holder.textContent = ""; // the parsed copy is all we need
		if (typeof doc === "string")
			return fatal(
				"This is the page template of spanprof view: it holds no profile. " +
					"Make a page with: spanprof view INPUT... --output profile.html",
			);
		if (!doc || typeof doc !== "object" || !String(doc.format || "").startsWith("spanprof-view/"))
			return fatal("The data in this page is not a spanprof view document.");
		try {
			M = buildModel(doc);
		} catch (e) {
			if (e instanceof DocError) return fatal("The profile in this page is damaged: " + e.message);
			throw e;
		}
		if (doc.format !== DATA_FORMAT)
			M.problems.push(`format ${doc.format} (this page reads ${DATA_FORMAT})`);
		doc = null;
		if (!M.types.length) M.types = [{ name: "cpu", sample_type: "samples", unit: "count" }];
		const cpu = M.types.findIndex((t) => t.name === "cpu");
		state.type = cpu >= 0 ? cpu : 0;
		state.t1 = M.time.buckets;
		renderHeader();
		renderInputs();
		// No span in any input (a recording without span links): no empty span table.
		$("spans-box").hidden = M.nSpans === 0;
		$("main").hidden = false;
		wire();
		renderTypes();
		renderFilters();
		makeChart();
		timeline = makeTimeline();
		layoutTimeline();
		// The fragment wins over the document's initial selection.
		const f = parseFragment();
		let sel = null;
		let source = "";
		if (f && (f.span || f.trace)) {
			sel = resolve(f.span, f.trace);
			source = "from the link";
		} else if (M.initial.span_id || M.initial.trace_id) {
			sel = resolve(M.initial.span_id, M.initial.trace_id);
			source = "--span-id/--trace-id";
		}
		// The initial selection goes into the URL too, so that it can be copied.
		applySelection(sel, !f && sel && !sel.missing ? "replace" : false, source);
		api(null);
	}

	function boot() {
		// Let the browser paint "loading" before parsing a large document.
		setTimeout(() => {
			try {
				start();
			} catch (e) {
				fatal("spanprof view failed: " + (e && e.message ? e.message : e));
				throw e;
			}
		}, 0);
	}

	if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
	else boot();
})();
