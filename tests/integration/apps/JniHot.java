// Integration fixture: two methods whose time is spent in native code, in a 3:1 split of CPU
// time: hotA compresses 4 KiB buffers with java.util.zip.Deflater (JNI into zlib), hotB writes
// 256-byte buffers to /dev/null through RandomAccessFile (JNI into write(2)). Rounds are
// measured in the thread's CPU time and last 2-6 ms of it at random (NanoHot.java says why).
import java.io.RandomAccessFile;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.zip.Deflater;

public class JniHot {
    static volatile long sink;
    static final byte[] input = new byte[4096];
    static final byte[] output = new byte[8192];
    static final byte[] small = new byte[256];
    static final Deflater deflater = new Deflater(6);
    static final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    static final SplittableRandom random = new SplittableRandom();
    static RandomAccessFile devnull;

    static void hotA(long ns) {
        long end = threads.getCurrentThreadCpuTime() + 3 * ns;
        while (threads.getCurrentThreadCpuTime() < end) {
            deflater.reset();
            deflater.setInput(input);
            deflater.finish();
            while (!deflater.finished())
                sink += deflater.deflate(output);
        }
    }

    static void hotB(long ns) throws Exception {
        long end = threads.getCurrentThreadCpuTime() + ns;
        while (threads.getCurrentThreadCpuTime() < end)
            for (int i = 0; i < 8; i++)
                devnull.write(small);
    }

    public static void main(String[] args) throws Exception {
        Random r = new Random(1);
        for (int i = 0; i < input.length; i++)
            input[i] = (byte) (r.nextInt(16) + 'a'); // compressible, not trivially
        devnull = new RandomAccessFile("/dev/null", "rw");
        if (!threads.isCurrentThreadCpuTimeSupported() || !threads.isThreadCpuTimeEnabled()) {
            System.err.println("thread CPU time is not measured by this JVM");
            System.exit(2);
        }
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        while (true) {
            long ns = random.nextLong(500_000, 1_500_000);
            hotA(ns);
            hotB(ns);
        }
    }
}
