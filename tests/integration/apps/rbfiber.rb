# Fibers for the built-in Ruby walker's tests (tests/integration/test_ruby_fiber.py): the main
# loop takes a work size u from an Enumerator with an external `next` (its generator runs in a
# fiber of its own), then resumes fiber A and fiber B with it. Per cycle produce does 4u units,
# fiber A 3u, fiber B u: enumerator 50%, fiber A 37.5%, fiber B 12.5% of the CPU, fiber A:B 3:1.
# u is random, so that the cycle never locks in phase with the sampling period. Every fiber's
# work is plain Ruby under named methods; the main loop itself does almost nothing. The test
# reads its line numbers from this file (markers "# L:<name>"). Prints "ready <pid>".
$stdout.sync = true
UNIT = 2_000

def spin(n)
  x = i = 0
  (x += i; i += 1) while i < n # L:spin
  x
end

def work_a(u)
  spin(3 * u * UNIT) # L:work_a
end

def work_b(u)
  spin(u * UNIT) # L:work_b
end

def work_e(u)
  spin(4 * u * UNIT) # L:work_e
end

def fiber_a(u)
  while true
    work_a(u) # L:fiber_a
    u = Fiber.yield
  end
end

def fiber_b(u)
  while true
    work_b(u) # L:fiber_b
    u = Fiber.yield
  end
end

def produce(out, rng)
  while true
    u = 1 + rng.rand(8)
    work_e(u) # L:produce
    out << u
  end
end

rng = Random.new
fa = Fiber.new { |u| fiber_a(u) } # L:fa
fb = Fiber.new { |u| fiber_b(u) } # L:fb
en = Enumerator.new { |y| produce(y, rng) } # L:en
puts "ready #{Process.pid}"
while true
  u = en.next # L:next
  fa.resume(u) # L:resume_a
  fb.resume(u) # L:resume_b
end
