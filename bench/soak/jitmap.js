// Soak workload: a Node process run with --perf-basic-prof that keeps compiling new functions,
// so its /tmp/perf-<pid>.map grows for as long as it runs (as a long-lived JIT process's does).
let n = 0;
function tick() {
  for (let i = 0; i < 50; i++) {
    const f = new Function('x', `let s = ${n++}; for (let i = 0; i < 2000; i++) s += x * i; return s;`);
    for (let k = 0; k < 20; k++) f(k);
  }
  setTimeout(tick, 20);
}
console.log(`ready ${process.pid}`);
tick();
