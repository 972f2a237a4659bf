<?php
// bench/php/run.py: a busy PHP process whose stack is about 50 frames deep.
function leaf()
{
    $s = 0;
    for ($i = 0; $i < 1000; $i++) {
        $s += $i * $i;
    }
    return $s;
}

function chain($d)
{
    return $d == 0 ? leaf() : chain($d - 1);
}

echo "ready\n";
while (true) {
    chain(48);
}
