// Integration fixture: two methods that spin on System.nanoTime() in a 3:1 split of CPU time
// (a native/vDSO call on every iteration: JDK 17's JFR ExecutionSample misses most of them).
// Rounds are measured in the thread's CPU time, not in wall time (on a busy host the thread is
// descheduled inside either method, which skews a wall-time split), and last 2-6 ms of CPU at
// random (rounds of a fixed length beat against a profiler's fixed sampling interval: 4 ms
// rounds against async-profiler's 2.004 ms at -f 499 gave 50-88 % for 75).
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.SplittableRandom;

public class NanoHot {
    static volatile long sink;
    static final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    static final SplittableRandom random = new SplittableRandom();

    static void spin() {
        for (int i = 0; i < 1000; i++)
            sink += System.nanoTime() & 1;
    }

    static void hotA(long ns) {
        long end = threads.getCurrentThreadCpuTime() + 3 * ns;
        do spin(); while (threads.getCurrentThreadCpuTime() < end);
    }

    static void hotB(long ns) {
        long end = threads.getCurrentThreadCpuTime() + ns;
        do spin(); while (threads.getCurrentThreadCpuTime() < end);
    }

    public static void main(String[] args) {
        if (!threads.isCurrentThreadCpuTimeSupported() || !threads.isThreadCpuTimeEnabled()) {
            System.err.println("thread CPU time is not measured by this JVM");
            System.exit(2);
        }
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        while (true) {
            long ns = random.nextLong(500_000, 1_500_000);
            hotA(ns);
            hotB(ns);
        }
    }
}
