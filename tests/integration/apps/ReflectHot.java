// Integration fixture: Java that calls native code that calls Java again. The main thread calls
// spin() through reflection; run with -Dsun.reflect.inflationThreshold=2147483647 on JDK 17,
// every call goes through the native NativeMethodAccessorImpl.invoke0 (JVM_InvokeMethod, then
// JavaCalls::call_helper back into Java), so spin's samples are Java -> native -> Java.
import java.lang.reflect.Method;

public class ReflectHot {
    static volatile long sink;

    public static void spin() {
        for (int i = 0; i < 2_000_000; i++) sink += i;
    }

    public static void main(String[] args) throws Exception {
        Method m = ReflectHot.class.getMethod("spin");
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        while (true)
            m.invoke(null);
    }
}
