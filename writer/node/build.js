// SPDX-License-Identifier: Apache-2.0
// Builds build/spanprof_ctx.node: src/addon.c (the Node-API binding) and the writer library
// (spanprof_ctx.c, from src/ in a packed package or ../ in a spanprof checkout) compiled into one
// shared object, as writer/writer.mk compiles the writer (-fPIC -mtls-dialect=gnu2: TLSDESC; Node
// loads the module with dlopen, so otel_thread_ctx_v1 lives in dynamic TLS). Headers come from
// the node-api-headers package (npm registry): nothing is downloaded at install time. CC picks
// the compiler (default cc). `node build.js --copy-sources` copies the writer's sources into
// src/ (npm pack runs it) so that a packed package builds outside a checkout.
'use strict';
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const here = __dirname;
const writerSources = ['spanprof_ctx.c', 'spanprof_ctx.h'];

function writerDir() {
  for (const dir of [path.join(here, 'src'), path.join(here, '..')]) {
    if (writerSources.every((f) => fs.existsSync(path.join(dir, f)))) return dir;
  }
  throw new Error('spanprof-context: spanprof_ctx.c not found in src/ or ../ ' +
                  '(install from a spanprof checkout: npm install <spanprof>/writer/node)');
}

if (process.argv.includes('--copy-sources')) {
  const dir = path.join(here, '..');
  for (const f of writerSources) fs.copyFileSync(path.join(dir, f), path.join(here, 'src', f));
  process.exit(0);
}

const wdir = writerDir();
// Installed from a directory without --install-links (npm install <path>), the package is a link
// and npm installs none of its dependencies: then the pinned node-api-headers is installed into
// this directory's node_modules with npm (from the registry, or npm's cache).
const HEADERS = 'node-api-headers@' + require('./package.json').dependencies['node-api-headers'];
function findHeaders() {
  return require.resolve('node-api-headers', { paths: [here] });
}
let headers;
try {
  headers = findHeaders();
} catch (e) {
  const npm = process.env.npm_execpath
    ? [process.execPath, process.env.npm_execpath] : ['npm'];
  execFileSync(npm[0], [...npm.slice(1), 'install', '--no-save', '--no-package-lock',
    '--ignore-scripts', '--legacy-peer-deps', '--no-audit', '--no-fund', '--prefix', here,
    HEADERS],
  { stdio: 'inherit' });
  headers = findHeaders();
}
const include = require(headers).include_dir;
const out = path.join(here, 'build', 'spanprof_ctx.node');
fs.mkdirSync(path.dirname(out), { recursive: true });
const cc = (process.env.CC || 'cc').split(/\s+/).filter(Boolean);
const args = [
  '-O2', '-fPIC', '-shared', '-mtls-dialect=gnu2', '-std=c11', '-D_GNU_SOURCE',
  '-DNAPI_VERSION=8', '-Wall', '-Wextra', '-Werror', '-fvisibility=hidden',
  '-I', include, '-I', wdir,
  path.join(here, 'src', 'addon.c'), path.join(wdir, 'spanprof_ctx.c'),
  '-o', out + '.tmp',
];
execFileSync(cc[0], [...cc.slice(1), ...args], { stdio: 'inherit' });
fs.renameSync(out + '.tmp', out);
console.log(`spanprof-context: built ${out}`);
