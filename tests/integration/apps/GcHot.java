// Integration fixture for the per-thread merge: the main thread allocates short-lived arrays
// while keeping a rotating window of them alive, so the garbage collector's own threads use a
// good share of the JVM's CPU (copying the survivors), beside the Java code that allocates.
public class GcHot {
    static final Object[] keep = new Object[150_000];
    static long next;

    static void churn() {
        for (int i = 0; i < 20_000; i++)
            keep[(int) (next++ % keep.length)] = new byte[256 + (i & 511)];
    }

    public static void main(String[] args) {
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        while (true)
            churn();
    }
}
