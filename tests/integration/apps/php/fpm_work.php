<?php
// One php-fpm request of tests/integration/test_php_fpm.py: about 20 ms of CPU in fpm_work.
function fpm_work($n)
{
    $x = 0;
    for ($i = 0; $i < $n; $i++) {
        $x = ($x * 33 + $i) & 0xffffff;
    }
    return $x;
}

echo fpm_work(600000), "\n";
