// Builds the page template of `spanprof view`: view/src/page.html with every script and style
// inlined (the app and the libraries from view/node_modules, installed by `npm ci`), and the
// libraries' license texts in a comment at the top and in THIRD_PARTY_LICENSES.
//
//   node view/build.mjs OUTDIR      writes OUTDIR/page.html and OUTDIR/THIRD_PARTY_LICENSES
//
// In the template, `<!-- @spanprof-inline script|style PATH -->` is replaced by the file
// (PATH relative to view/src, else to view/node_modules) and `<!-- @spanprof-licenses -->` by
// the licenses. The output keeps exactly one data placeholder, checked here, which the C side
// replaces with the JSON document (docs/view-format.md).
import { readFileSync, writeFileSync, mkdirSync, existsSync, renameSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const VIEW = dirname(fileURLToPath(import.meta.url));
const SRC = join(VIEW, "src");
const MODULES = join(VIEW, "node_modules");
const PLACEHOLDER = '"__SPANPROF_' + 'DATA__"';

function die(msg) {
	console.error(`view/build.mjs: ${msg}`);
	process.exit(1);
}

function source(path) {
	for (const base of [SRC, MODULES]) {
		const p = join(base, path);
		if (existsSync(p)) return readFileSync(p, "utf8");
	}
	die(`${path} is neither in view/src nor in view/node_modules: run 'npm ci --prefix view'`);
}

// Text inside <script>/<style> must not end the element early nor open a comment the HTML
// parser would track ("<!--" in script data changes how "</script>" is parsed).
function inline(kind, path) {
	const text = source(path);
	const tag = kind === "script" ? "script" : "style";
	if (new RegExp(`</${tag}`, "i").test(text) || text.includes("<!--"))
		die(`${path} contains "</${tag}" or "<!--": it cannot be inlined as is`);
	if (text.includes(PLACEHOLDER)) die(`${path} contains the data placeholder`);
	const banner = `/* ${path} */\n`;
	return `<${tag}>\n${banner}${text.trimEnd()}\n</${tag}>`;
}

// The production dependencies (not the test driver) from the lock file: what the page bundles.
function licenses() {
	const lock = JSON.parse(readFileSync(join(VIEW, "package-lock.json"), "utf8"));
	const pkgs = [];
	for (const [key, meta] of Object.entries(lock.packages)) {
		if (!key.startsWith("node_modules/") || meta.dev) continue;
		const dir = join(VIEW, key);
		const pj = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
		const file = ["LICENSE", "LICENSE.md", "LICENSE.txt", "license", "LICENCE"].find((f) =>
			existsSync(join(dir, f)),
		);
		if (!file) die(`${pj.name} has no license file`);
		pkgs.push({
			name: pj.name,
			version: pj.version,
			license: pj.license,
			text: readFileSync(join(dir, file), "utf8").trim(),
		});
	}
	pkgs.sort((a, b) => a.name.localeCompare(b.name));
	const out = [
		"Third-party software in this page, bundled from the npm registry at build time:",
		"d3 (dist/d3.min.js, with the d3 modules and libraries it bundles) and d3-flame-graph",
		"(dist/d3-flamegraph.umd.min.js). The license of every package of their dependency",
		"tree follows (a few only serve d3's Node.js command-line tools and are not in the page).",
		"",
	];
	for (const p of pkgs) {
		out.push("=".repeat(78), `${p.name} ${p.version} (${p.license})`, "-".repeat(78), p.text, "");
	}
	return out.join("\n");
}

function main() {
	const outdir = process.argv[2];
	if (!outdir) die("usage: node view/build.mjs OUTDIR");
	const lic = licenses();
	if (lic.includes("-->") || lic.includes("--!>")) die("a license text would end the comment");
	let page = readFileSync(join(SRC, "page.html"), "utf8");
	page = page.replace(/<!-- @spanprof-inline (script|style) (\S+) -->/g, (_, kind, path) =>
		inline(kind, path),
	);
	page = page.replace("<!-- @spanprof-licenses -->", () => `<!--\n${lic}\n-->`);
	if (page.includes("@spanprof-")) die("page.html has a marker this script does not know");
	const n = page.split(PLACEHOLDER).length - 1;
	if (n !== 1) die(`page.html must hold the data placeholder exactly once (found ${n})`);
	mkdirSync(outdir, { recursive: true });
	// Written under a temporary name first: make never sees a half-written page.
	writeFileSync(join(outdir, "THIRD_PARTY_LICENSES"), lic + "\n");
	writeFileSync(join(outdir, "page.html.tmp"), page);
	renameSync(join(outdir, "page.html.tmp"), join(outdir, "page.html"));
}

main();
