# A pre-forking server in miniature (Unicorn/Puma style): the master loads the code, forks 3
# workers that each serve "requests" (busy work in worker_N) and waits for them; prints
# "ready <master> <w0> <w1> <w2>" (tests/integration/test_ruby_bpf.py).
$stdout.sync = true

def handle(n)
  x = 0
  n.times { |i| x += i }
  x
end

def worker_0 = loop { handle(20_000) }
def worker_1 = loop { handle(20_000) }
def worker_2 = loop { handle(20_000) }

pids = 3.times.map do |i|
  fork do
    trap("TERM") { exit!(0) }
    send("worker_#{i}")
  end
end
trap("TERM") do
  pids.each { |p| Process.kill("TERM", p) rescue nil }
  exit!(0)
end
puts "ready #{Process.pid} #{pids.join(' ')}"
Process.waitall
