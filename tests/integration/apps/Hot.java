// Integration fixture: a JVM with two hot methods in a 3:1 ratio, on `java Hot [threads]`
// threads (default 1: the main thread only). Rounds and pauses are of random length (3:1 on
// average): rounds of a fixed length can beat against a profiler's fixed sampling interval.
import java.util.concurrent.ThreadLocalRandom;

public class Hot {
    static volatile long sink;

    static void hotA() {
        int n = 3 * 250_000 * ThreadLocalRandom.current().nextInt(2, 7);
        for (int i = 0; i < n; i++) sink += i;
    }

    static void hotB() {
        int n = 250_000 * ThreadLocalRandom.current().nextInt(2, 7);
        for (int i = 0; i < n; i++) sink += i;
    }

    static void work() throws InterruptedException {
        while (true) {
            hotA();
            hotB();
            Thread.sleep(ThreadLocalRandom.current().nextInt(2, 9));
        }
    }

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 1;
        for (int t = 1; t < threads; t++) {
            Thread th = new Thread(() -> {
                try {
                    work();
                } catch (InterruptedException e) {
                    // exit quietly
                }
            }, "worker-" + t);
            th.setDaemon(true);
            th.start();
        }
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        work();
    }
}
