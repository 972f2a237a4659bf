// Integration fixture: two methods that spin on System.nanoTime() in a 3:1 split of CPU time
// (a native/vDSO call on every iteration: JDK 17's JFR ExecutionSample misses most of them).
public class NanoHot {
    static volatile long sink;

    static void hotA() {
        long end = System.nanoTime() + 3_000_000;
        while (System.nanoTime() < end) sink++;
    }

    static void hotB() {
        long end = System.nanoTime() + 1_000_000;
        while (System.nanoTime() < end) sink++;
    }

    public static void main(String[] args) {
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        while (true) {
            hotA();
            hotB();
        }
    }
}
