// Throughput target for bench/node/run.py: prints "<ms since start> <ops in the last 100 ms>
// <longest event-loop stall in it, ms> <CPU microseconds it used>" every 100 ms. Workloads: "steady" (the same hot
// functions: compiled once, so a perf map costs nothing once written), "churn" (a new function
// compiled every operation: one perf-map line each while the map is on).
const kind = process.argv[2] || "steady";
const t0 = Date.now();
let ops = 0, last = Date.now(), stall = 0, n = 0;
function hot(x) { let s = 0; for (let i = 0; i < 2000; i++) s += Math.sqrt(i + x); return s; }
function one() {
  if (kind === "churn") {
    const f = new Function("x", `let s = ${n++}; for (let i = 0; i < 200; i++) s += i * x; return s;`);
    f(3);
  } else {
    hot(ops);
  }
  ops++;
}
function slice() {
  const now = Date.now();
  stall = Math.max(stall, now - last);
  last = now;
  const end = now + 5;
  while (Date.now() < end) one();
  setImmediate(slice);
}
let cpu = process.cpuUsage();
setInterval(() => {
  const d = process.cpuUsage(cpu);
  cpu = process.cpuUsage();
  process.stdout.write(`${Date.now() - t0} ${ops} ${stall} ${d.user + d.system}\n`);
  ops = 0; stall = 0;
}, 100);
console.log("ready " + process.pid);
slice();
