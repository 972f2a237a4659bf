// Integration fixture: one thread recursing to depth 200 (`down(200)` .. `down(0)`, 201 frames of
// DeepHot.down) and spinning at the bottom; a profiler that keeps the whole stack shows exactly
// 201 `DeepHot.down(I)J` frames between `DeepHot.main` and `DeepHot.spin` in every sample there.
public class DeepHot {
    static volatile long sink;

    static long spin() {
        long s = 0;
        for (int i = 0; i < 2_000_000; i++) s += i ^ sink;
        return s;
    }

    static long down(int n) {
        if (n == 0) return spin();
        return down(n - 1) + n; // not a tail call: each level keeps its frame
    }

    public static void main(String[] args) {
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        while (true) sink += down(200);
    }
}
