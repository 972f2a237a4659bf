// Benchmark load for bench/java/modes.py: `java Load THREADS` runs THREADS threads calling
// Busy.work (random call chains up to ~70 frames deep, collections, strings, arithmetic: many
// distinct stacks, as a profiler meets in a real service) in a loop, and counts the calls.
// It prints "ready <pid>", then, for every line read on stdin, the calls done so far.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLongArray;

public class Load {
    public static void main(String[] args) throws Exception {
        int threads = Integer.parseInt(args[0]);
        // one counter per 128 bytes: the threads do not share a cache line
        AtomicLongArray ops = new AtomicLongArray(threads * 16);
        for (int t = 0; t < threads; t++) {
            final int slot = t * 16;
            Thread th = new Thread(() -> {
                Random r = new Random(slot);
                while (true) {
                    Busy.sink += Busy.work(r, 1 + r.nextInt(70));
                    ops.lazySet(slot, ops.get(slot) + 1);
                }
            }, "load-" + t);
            th.setDaemon(true);
            th.start();
        }
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        while (in.readLine() != null) {
            long n = 0;
            for (int t = 0; t < threads; t++)
                n += ops.get(t * 16);
            System.out.println(n);
            System.out.flush();
        }
    }
}
