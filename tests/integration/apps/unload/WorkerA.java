// Integration fixture for Unloader.java: loaded and unloaded again and again.
public class WorkerA implements java.util.function.IntConsumer {
    static volatile long sink;

    public void accept(int units) {
        for (int i = 0; i < units * 1_000_000; i++) sink += i;
    }
}
