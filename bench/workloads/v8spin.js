// A CPU-bound JavaScript program for bench/runtime/v8_bpf.py: a chain of DEPTH (argv[3]) named
// functions calls a loop, for SECONDS (argv[2]) of wall time. No flags needed.
"use strict";
const seconds = Number(process.argv[2] || 10);
const depth = Number(process.argv[3] || 10);

function leafLoop(n) {
  let x = 0;
  for (let i = 0; i < n; i++) x = (x * 31 + i) % 1000003;
  return x;
}

function level(d, n) {
  return d <= 0 ? leafLoop(n) : level(d - 1, n) + 1;
}

const end = Date.now() + seconds * 1000;
let sum = 0;
while (Date.now() < end) sum += level(depth, 100000);
if (sum < 0) console.log(sum);
