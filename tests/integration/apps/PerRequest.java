// Integration fixture: thread per request. Each request is a new thread that runs handleA then
// handleB (3:1 in CPU time, about 3 ms and 1 ms once compiled: the ~4 ms requests of issue 31)
// and exits; the main thread starts the next one when it has ended. Profilers with per-thread timers barely see such
// threads (issue 31).
public class PerRequest {
    static volatile long sink;

    static void handleA() {
        int n = 3 * 600_000;
        for (int i = 0; i < n; i++) sink += i;
    }

    static void handleB() {
        int n = 600_000;
        for (int i = 0; i < n; i++) sink += i;
    }

    public static void main(String[] args) throws Exception {
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        while (true) {
            Thread t = new Thread(() -> {
                handleA();
                handleB();
            });
            t.start();
            t.join();
        }
    }
}
