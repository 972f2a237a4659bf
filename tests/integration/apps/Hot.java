// Integration fixture: a JVM with two hot methods in a 3:1 ratio, on a few threads.
public class Hot {
    static volatile long sink;

    static void hotA() {
        for (int i = 0; i < 3_000_000; i++) sink += i;
    }

    static void hotB() {
        for (int i = 0; i < 1_000_000; i++) sink += i;
    }

    public static void main(String[] args) throws Exception {
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        while (true) {
            hotA();
            hotB();
            Thread.sleep(5);
        }
    }
}
