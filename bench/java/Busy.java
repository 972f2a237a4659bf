// Benchmark workload for the JFR parser: 6 busy threads walking random call chains (up to
// ~150 frames) through ten mutually recursive methods plus JDK collection and string code,
// so a recording holds thousands of distinct stacks.
import java.util.*;

public class Busy {
    static volatile long sink;

    static long work(Random r, int depth) {
        if (depth <= 0) {
            switch (r.nextInt(3)) {
            case 0: {
                HashMap<Integer, String> m = new HashMap<>();
                for (int i = 0; i < 200; i++)
                    m.put(r.nextInt(1000), Integer.toString(i));
                return m.size();
            }
            case 1: {
                StringBuilder sb = new StringBuilder();
                for (int i = 0; i < 100; i++)
                    sb.append(r.nextInt()).append(',');
                return sb.toString().split(",").length;
            }
            default: {
                long s = 0;
                for (int i = 0; i < 20000; i++)
                    s += (s ^ i) * 31;
                return s;
            }
            }
        }
        switch (r.nextInt(10)) {
        case 0: return a0(r, depth - 1);
        case 1: return a1(r, depth - 1);
        case 2: return a2(r, depth - 1);
        case 3: return a3(r, depth - 1);
        case 4: return a4(r, depth - 1);
        case 5: return a5(r, depth - 1);
        case 6: return a6(r, depth - 1);
        case 7: return a7(r, depth - 1);
        case 8: return a8(r, depth - 1);
        default: return a9(r, depth - 1);
        }
    }

    static long a0(Random r, int d) { return work(r, d) + 1; }
    static long a1(Random r, int d) { return work(r, d) + 2; }
    static long a2(Random r, int d) { return work(r, d) + 3; }
    static long a3(Random r, int d) { return work(r, d) + 4; }
    static long a4(Random r, int d) { return work(r, d) + 5; }
    static long a5(Random r, int d) { return work(r, d) + 6; }
    static long a6(Random r, int d) { return work(r, d) + 7; }
    static long a7(Random r, int d) { return work(r, d) + 8; }
    static long a8(Random r, int d) { return work(r, d) + 9; }
    static long a9(Random r, int d) { return work(r, d) + 10; }

    public static void main(String[] args) throws Exception {
        long end = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000L;
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < 6; t++) {
            final int seed = t;
            Thread th = new Thread(() -> {
                Random r = new Random(seed);
                while (System.nanoTime() < end)
                    sink += work(r, 1 + r.nextInt(70));
            }, "busy-" + t);
            th.start();
            ts.add(th);
        }
        for (Thread th : ts)
            th.join();
    }
}
