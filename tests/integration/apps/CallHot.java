// Integration fixture: a loop calling a tiny method that is kept out of line
// (-XX:CompileCommand=dontinline,CallHot::tiny), so that a good part of the samples land in its
// prologue or epilogue, where its frame is not built yet or already taken down.
public class CallHot {
    static volatile long sink;

    static long tiny(long x) {
        return x * 31 + 7;
    }

    static void loop() {
        long s = 0;
        for (int i = 0; i < 50_000_000; i++) s = tiny(s + i);
        sink = s;
    }

    public static void main(String[] args) {
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        while (true) loop();
    }
}
