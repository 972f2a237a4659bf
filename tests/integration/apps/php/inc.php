<?php
// Included by hot.php: a function of another file (its line numbers are asserted).
function included_work($n)
{
    $x = 0;
    for ($i = 0; $i < $n; $i++) {
        $x = ($x * 31 + $i) & 0xffff;
    }
    return $x;
}
