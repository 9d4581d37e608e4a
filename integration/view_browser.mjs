// Browser driver for the tests of the `spanprof view` page (integration/test_view_browser.py):
// loads a page in headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core from
// view/node_modules), runs a list of actions and prints one JSON object on stdout.
//
//   node integration/view_browser.mjs < job.json
//
// job: {"url": "file:///...#span=...", "viewport": {"width": 1400, "height": 1000},
//       "timeout_ms": 30000, "actions": [ACTION...]}
// ACTION (each may carry "name": its result is also stored under results_by_name[name]):
//   {"op": "ready"}                        wait for window.spanprofView.ready
//   {"op": "eval", "expr": "JS expr"}      value of the expression (awaited if a promise)
//   {"op": "wait_for", "expr": "JS expr"}  wait until the expression is truthy
//   {"op": "click"|"hover", "selector"}    real mouse events on the first match
//   {"op": "fill", "selector", "text"}     types into an input
//   {"op": "press", "selector", "key"}
//   {"op": "select", "selector", "value"}  picks an <option> of a <select>
//   {"op": "text", "selector"}             innerText of the first match
//   {"op": "count", "selector"}            number of matches
//   {"op": "visible", "selector"}          whether the first match is visible
//   {"op": "drag", "selector", "from": [fx, fy], "to": [fx, fy]}   mouse drag inside the first
//                                          match, positions as fractions of its box
//   {"op": "goto", "url"}                  loads another URL in the same page
//   {"op": "sleep", "ms"}                  lets transitions finish
//   {"op": "screenshot", "path", "full_page": true}
// Output: {"results": [{"op", "name", "value", "ms"}], "results_by_name": {...},
//          "console": [{"type", "text", "location"}], "page_errors": [...],
//          "requests": [url...], "error": null | "message (action N)"}
// The exit status is 0 when every action ran, 1 otherwise (the JSON is printed either way).
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";

const require = createRequire(new URL("../view/package.json", import.meta.url));
const { chromium } = require("playwright-core");

const job = JSON.parse(readFileSync(0, "utf8"));
const timeout = job.timeout_ms || 30000;
const out = { results: [], results_by_name: {}, console: [], page_errors: [], requests: [], error: null };

const browser = await chromium.launch({
	executablePath: process.env.SPANPROF_CHROMIUM || "/usr/bin/chromium",
	headless: true,
	args: ["--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
	timeout,
});
let status = 0;
try {
	const context = await browser.newContext({ viewport: job.viewport || { width: 1400, height: 1000 } });
	const page = await context.newPage();
	page.setDefaultTimeout(timeout);
	page.on("console", (m) => {
		const loc = m.location();
		out.console.push({ type: m.type(), text: m.text(), location: loc ? `${loc.url}:${loc.lineNumber}` : "" });
	});
	page.on("pageerror", (e) => out.page_errors.push(String(e && e.stack ? e.stack : e)));
	page.on("request", (r) => out.requests.push(r.url()));
	await page.goto(job.url, { waitUntil: "load" });
	const actions = job.actions || [];
	for (let i = 0; i < actions.length; i++) {
		const a = actions[i];
		const t0 = Date.now();
		let value = null;
		try {
			value = await run(page, a);
		} catch (e) {
			out.error = `${e && e.message ? e.message : e} (action ${i}: ${JSON.stringify(a)})`;
			status = 1;
			break;
		}
		const r = { op: a.op, name: a.name || null, value, ms: Date.now() - t0 };
		out.results.push(r);
		if (a.name) out.results_by_name[a.name] = value;
	}
} catch (e) {
	out.error = String(e && e.message ? e.message : e);
	status = 1;
} finally {
	await browser.close();
}
// Exit only once the output is flushed: on a pipe, process.exit() right after write() cuts
// everything past the first 64 KiB.
process.stdout.write(JSON.stringify(out) + "\n", () => process.exit(status));

async function run(page, a) {
	switch (a.op) {
		case "ready":
			await page.waitForFunction(() => window.spanprofView && window.spanprofView.ready);
			return await page.evaluate(() => window.spanprofView.error);
		case "wait_for": {
			// Polled from here: the page's Content-Security-Policy forbids waitForFunction's eval.
			const deadline = Date.now() + timeout;
			while (!(await page.evaluate(a.expr))) {
				if (Date.now() > deadline) throw new Error(`timed out waiting for ${a.expr}`);
				await page.waitForTimeout(50);
			}
			return true;
		}
		case "eval":
			return await page.evaluate(`(async () => (${a.expr}))()`);
		case "click":
			await page.locator(a.selector).first().click();
			return true;
		case "hover":
			await page.locator(a.selector).first().hover();
			return true;
		case "fill":
			await page.locator(a.selector).first().fill(a.text);
			return true;
		case "press":
			await page.locator(a.selector).first().press(a.key);
			return true;
		case "select":
			return await page.locator(a.selector).first().selectOption(String(a.value));
		case "text":
			return await page.locator(a.selector).first().innerText();
		case "count":
			return await page.locator(a.selector).count();
		case "visible":
			return await page.locator(a.selector).first().isVisible();
		case "drag": {
			const box = await page.locator(a.selector).first().boundingBox();
			if (!box) throw new Error(`${a.selector} is not visible`);
			const at = ([fx, fy]) => [box.x + fx * box.width, box.y + fy * box.height];
			await page.mouse.move(...at(a.from));
			await page.mouse.down();
			await page.mouse.move(...at(a.to), { steps: 8 });
			await page.mouse.up();
			return true;
		}
		case "goto":
			await page.goto(a.url, { waitUntil: "load" });
			return true;
		case "sleep":
			await page.waitForTimeout(a.ms);
			return true;
		case "screenshot":
			await page.screenshot({ path: a.path, fullPage: a.full_page !== false });
			return a.path;
		default:
			throw new Error(`unknown op ${a.op}`);
	}
}
