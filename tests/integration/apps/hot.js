// Integration fixture: a Node process that burns about a third of a CPU.
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
console.log("ready " + process.pid);
setInterval(() => fib(22), 10);
