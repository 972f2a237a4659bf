// Integration fixture: class unloading during profiling. Every PERIOD ms (argument 3, default
// 1000) it loads WorkerA and WorkerB (apps/unload/, compiled apart: arguments 1 and 2) through
// new class loaders and runs a full GC, which unloads the previous pair: their Methods' memory is
// freed for reuse and their compiled code flushed. In between it runs WorkerA.accept(3) and
// WorkerB.accept(1) (3:1 in CPU time), called through IntConsumer (no reflection on the stack).
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Paths;
import java.util.function.IntConsumer;

public class Unloader {
    static IntConsumer load(URL dir, String name) throws Exception {
        try (URLClassLoader l = new URLClassLoader(new URL[] {dir}, null)) {
            return (IntConsumer) l.loadClass(name).getDeclaredConstructor().newInstance();
        }
    }

    public static void main(String[] args) throws Exception {
        URL da = Paths.get(args[0]).toUri().toURL(), db = Paths.get(args[1]).toUri().toURL();
        long period = (args.length > 2 ? Long.parseLong(args[2]) : 1000) * 1_000_000L;
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        IntConsumer a = null, b = null;
        long next = 0;
        while (true) {
            if (System.nanoTime() >= next) {
                a = load(da, "WorkerA");
                b = load(db, "WorkerB");
                System.gc();
                next = System.nanoTime() + period;
            }
            a.accept(3);
            b.accept(1);
        }
    }
}
