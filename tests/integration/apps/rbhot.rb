# A Ruby program with a known CPU split for the built-in Ruby walker's tests
# (tests/integration/test_ruby_bpf.py): hot_a runs 3 times for each run of hot_b (3:1), both 5
# calls deep under `recurse`; blocks, a class method and a define_method method on the way; a thread
# that sleeps. The test reads its line numbers from this file (markers "# L:<name>").
$stdout.sync = true

def spin(n)
  x = 0
  i = 0
  while i < n # L:spin
    x += i
    i += 1
  end
  x
end

def hot_a
  spin(10_000) # L:hot_a
end

def hot_b
  spin(10_000) # L:hot_b
end

def recurse(depth, &blk)
  return blk.call if depth <= 1 # L:recurse_leaf
  recurse(depth - 1, &blk) # L:recurse
end

class Worker
  def self.run_a
    recurse(5) { hot_a } # L:run_a
  end

  define_method(:run_b) do
    recurse(5) { hot_b } # L:run_b
  end
end

sleeper = Thread.new { sleep } # L:sleeper
w = Worker.new
puts "ready #{Process.pid}"
loop do # L:loop
  3.times { Worker.run_a } # L:main_a
  w.run_b # L:main_b
end
