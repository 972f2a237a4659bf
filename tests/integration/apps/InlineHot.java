// Integration fixture: inlined frames (issue 31). outer() calls the tiny mid(), which C2 inlines
// into it; mid calls spin(), kept out of line (-XX:CompileCommand=dontinline,InlineHot.spin on
// the command line), where the time goes. A sample in spin has outer's nmethod as its caller
// frame, its return address inside mid's inlined scope: outer()V_[j], mid(I)V_[i], spin(I)V_[j].
public class InlineHot {
    static volatile long sink;

    static void spin(int n) {
        long s = 0;
        for (int i = 0; i < n; i++) s += i ^ (s >>> 3);
        sink = s;
    }

    static void mid(int n) {
        spin(n + 1);
    }

    static void outer() {
        for (int i = 0; i < 200; i++) mid(2_000 + (i & 7));
    }

    public static void main(String[] args) {
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        while (true) outer();
    }
}
