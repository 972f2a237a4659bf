// Integration fixture: a JVM with two hot methods in a 3:1 ratio, on `java Hot [threads]`
// threads (default 1: the main thread only).
public class Hot {
    static volatile long sink;

    static void hotA() {
        for (int i = 0; i < 3_000_000; i++) sink += i;
    }

    static void hotB() {
        for (int i = 0; i < 1_000_000; i++) sink += i;
    }

    static void work() throws InterruptedException {
        while (true) {
            hotA();
            hotB();
            Thread.sleep(5);
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
