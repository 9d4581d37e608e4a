// A CPU-bound JavaScript program with a known call chain for the JIT tests (test_jit.py):
// main -> outerWork -> middleWork -> innerWork, for SECONDS (argv[2]) of the process's CPU time.
// Waits for one line on stdin before it starts (the test's gate: the agent samples by then),
// and prints {"cpu_s": ...} (user + system CPU seconds spent working) when done.
"use strict";
const fs = require("fs");

function innerWork(n) {
  let x = 0;
  for (let i = 0; i < n; i++) x = (x * 31 + i) % 1000003;
  return x;
}

function middleWork(n) {
  return innerWork(n) + 1;
}

function outerWork(n) {
  return middleWork(n) + 1;
}

function cpuMicros() {
  const u = process.cpuUsage();
  return u.user + u.system;
}

function main() {
  const seconds = Number(process.argv[2] || 3);
  const gate = Buffer.alloc(64);
  try {
    fs.readSync(0, gate, 0, gate.length, null);
  } catch (e) {
    // no stdin: start at once
  }
  const start = cpuMicros();
  const end = start + seconds * 1e6;
  let sum = 0;
  while (cpuMicros() < end) sum += outerWork(200000);
  process.stdout.write(JSON.stringify({ cpu_s: (cpuMicros() - start) / 1e6, sum: sum > 0 }) + "\n");
}

main();
