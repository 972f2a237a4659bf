# Two busy Ruby threads and a sleeping main thread (tests/integration/test_ruby_bpf.py).
$stdout.sync = true

def spin(n)
  x = 0
  n.times { |i| x += i }
  x
end

def thr_a
  loop { spin(20_000) }
end

def thr_b
  loop { spin(20_000) }
end

ts = [Thread.new { thr_a }, Thread.new { thr_b }]
puts "ready #{Process.pid}"
ts.each(&:join)
