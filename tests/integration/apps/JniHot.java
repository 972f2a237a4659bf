// Integration fixture: two methods whose time is spent in native code, in a 3:1 split of CPU
// time: hotA compresses 4 KiB buffers with java.util.zip.Deflater (JNI into zlib), hotB writes
// 256-byte buffers to /dev/null through RandomAccessFile (JNI into write(2)).
import java.io.RandomAccessFile;
import java.util.Random;
import java.util.zip.Deflater;

public class JniHot {
    static volatile long sink;
    static final byte[] input = new byte[4096];
    static final byte[] output = new byte[8192];
    static final byte[] small = new byte[256];
    static final Deflater deflater = new Deflater(6);
    static RandomAccessFile devnull;

    static void hotA() {
        long end = System.nanoTime() + 3_000_000;
        while (System.nanoTime() < end) {
            deflater.reset();
            deflater.setInput(input);
            deflater.finish();
            while (!deflater.finished())
                sink += deflater.deflate(output);
        }
    }

    static void hotB() throws Exception {
        long end = System.nanoTime() + 1_000_000;
        while (System.nanoTime() < end)
            for (int i = 0; i < 8; i++)
                devnull.write(small);
    }

    public static void main(String[] args) throws Exception {
        Random r = new Random(1);
        for (int i = 0; i < input.length; i++)
            input[i] = (byte) (r.nextInt(16) + 'a'); // compressible, not trivially
        devnull = new RandomAccessFile("/dev/null", "rw");
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        while (true) {
            hotA();
            hotB();
        }
    }
}
