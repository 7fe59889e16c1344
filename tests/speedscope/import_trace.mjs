// tests/speedscope/import_trace.mjs — loads a Chrome trace with speedscope's own importer
// (the npm package `speedscope`, a third-party viewer) and fails when the importer reports
// a frame left open at the end of a thread or ended out of order: what a viewer that adds
// ts + dur in double precision sees when slices do not nest in floating point.
//
// Usage: node import_trace.mjs SPEEDSCOPE_DIR TRACE.json
//   SPEEDSCOPE_DIR: the installed package (node_modules/speedscope).
// Exit: 0 imported cleanly; 1 the importer complained (each complaint printed); 2 usage,
// or the package's bundle does not hold the importer where expected.
//
// speedscope ships one browser bundle (dist/release/speedscope-*.js), not a library. Its
// Chrome-trace importer is the function that the bundle calls right after logging
// "Importing as Trace Event Format profile"; the script finds that function's name in the
// bundle text, runs the bundle in a sandbox whose `document` is missing (so only the final
// render call fails, after every definition has run), and calls the importer directly.
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import zlib from 'node:zlib';

const [dir, tracePath] = process.argv.slice(2);
if (!dir || !tracePath) {
  console.error('usage: node import_trace.mjs SPEEDSCOPE_DIR TRACE.json[.gz]');
  process.exit(2);
}
const release = path.join(dir, 'dist', 'release');
const bundleName = fs.readdirSync(release).find((f) => /^speedscope-.*\.js$/.test(f));
if (!bundleName) {
  console.error(`no speedscope-*.js bundle in ${release}`);
  process.exit(2);
}
let bundle = fs.readFileSync(path.join(release, bundleName), 'utf8');
const m = bundle.match(/"Importing as Trace Event Format profile"\),([A-Za-z_$][\w$]*)\(/);
if (!m) {
  console.error(`cannot find speedscope's Chrome importer in ${bundleName} (a new bundle layout?)`);
  process.exit(2);
}
// Hand the importer out of the bundle's closure before anything else in it runs.
const open = bundle.indexOf('(()=>{');
if (open < 0) {
  console.error(`unexpected bundle layout in ${bundleName}`);
  process.exit(2);
}
bundle = bundle.slice(0, open + 6) + `globalThis.__importChrome=(...a)=>${m[1]}(...a);` + bundle.slice(open + 6);

const complaints = [];
const quiet = { log() {}, info() {}, error() {}, warn: (...a) => complaints.push(a.join(' ')) };
const sandbox = { console: quiet, setTimeout, clearTimeout, TextDecoder, TextEncoder, URL, navigator: { userAgent: 'node' } };
sandbox.window = sandbox;
sandbox.self = sandbox;
sandbox.location = { hash: '', search: '', href: 'file:///' };
vm.createContext(sandbox);
try {
  vm.runInContext(bundle, sandbox, { filename: bundleName });
} catch (e) {
  // Expected: the final render into `document.body` fails without a DOM.
}
if (typeof sandbox.__importChrome !== 'function') {
  console.error('the bundle did not expose the importer');
  process.exit(2);
}

let raw = fs.readFileSync(tracePath);
if (tracePath.endsWith('.gz')) raw = zlib.gunzipSync(raw);
const trace = JSON.parse(raw.toString('utf8'));
const events = Array.isArray(trace) ? trace : trace.traceEvents;
let group;
try {
  group = sandbox.__importChrome(trace, path.basename(tracePath));
} catch (e) {
  complaints.push(`importer threw: ${e && e.message ? e.message : e}`);
}
const bad = complaints.filter((c) => /Tried to end|still open|out of order|Tried to leave|threw/.test(c));
if (bad.length > 0) {
  for (const c of bad.slice(0, 20)) console.log(`speedscope: ${c}`);
  console.log(`FAIL: speedscope's importer reported ${bad.length} problem(s) in ${tracePath}`);
  process.exit(1);
}
const profiles = group && group.profiles ? group.profiles.length : 0;
console.log(`ok: speedscope ${bundleName} imported ${events.length} events into ${profiles} profile(s), every frame closed in order`);
