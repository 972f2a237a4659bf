// Integration fixture: a Node process that burns about a third of a CPU.
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function burn() {
  const t = Date.now();
  while (Date.now() - t < 5) fib(20);
  setTimeout(burn, 10);
}
console.log("ready " + process.pid);
burn();
