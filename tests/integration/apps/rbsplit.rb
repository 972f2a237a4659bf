# Integration fixture for the Ruby profilers (Ruby 2.6+).
#
# The main thread calls Worker#hot_a and Worker#hot_b through a recursive helper; hot_a does
# three times the work of hot_b, so the CPU ratio of hot_a to hot_b is 3:1. The work per cycle
# is random (hot_a always three times hot_b's), so that the cycle never locks in phase with the
# scheduler or the sampling period. The work is plain Ruby (a while loop of integer
# arithmetic), so the leaf frame is the hot method itself. A second thread sleeps: it must not
# appear in a CPU profile. Prints "ready <pid>" once both run.
#
# Usage: rbsplit.rb. RBSPLIT_DEPTH (default 3) sets the depth of the recursion above the hot
# methods.

DEPTH = Integer(ENV.fetch("RBSPLIT_DEPTH", "3"))

class Worker
  def hot_a(units)
    s = 0
    i = 0
    n = 3 * units * 1000
    while i < n
      s += i * i % 7
      i += 1
    end
    s
  end

  def hot_b(units)
    s = 0
    i = 0
    n = units * 1000
    while i < n
      s += i * i % 7
      i += 1
    end
    s
  end

  def descend(depth, units)
    return descend(depth - 1, units) if depth > 1

    hot_a(units) + hot_b(units)
  end
end

sleeper = Thread.new { sleep }
worker = Worker.new
rng = Random.new
$stdout.puts "ready #{Process.pid}"
$stdout.flush
loop do
  worker.descend(DEPTH, 5 + rng.rand(30))
end
sleeper.join
