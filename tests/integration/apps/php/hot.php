<?php
// CPU split fixture for the PHP walker (tests/integration/test_php_bpf.py): hot_a does 3 units of
// work for every unit hot_b does; methods, static methods, a closure, recursion of known depth
// (5) and a function of an included file are on the way. Line numbers are asserted: edit with care.
require __DIR__ . '/inc.php';
echo "ready\n";

function spin($n)
{
    $x = 0;
    for ($i = 0; $i < $n; $i++) {
        $x = ($x + ($i ^ ($x >> 3))) & 0xffffff;
    }
    return $x;
}

function hot_a($n)
{
    return spin(3 * $n);
}

function hot_b($n)
{
    return spin($n);
}

class Worker
{
    public function run($n)
    {
        return hot_a($n) + self::helper($n);
    }

    public static function helper($n)
    {
        return hot_b($n);
    }
}

function recurse($depth, $fn)
{
    if ($depth <= 1) {
        return $fn();
    }
    return recurse($depth - 1, $fn);
}

$w = new Worker();
$unit = 20000;
$end = isset($argv[1]) ? microtime(true) + (float)$argv[1] : INF;
while (microtime(true) < $end) {
    recurse(5, function () use ($w, $unit) {
        return $w->run($unit);
    });
    included_work($unit / 4);
}
