// Integration fixture: a .NET program with two hot methods in a 3:1 ratio (PolyNet.Hot.HotA and
// HotB), compiled by Debian's mcs and run on the .NET Core runtime of `make deps` (conftest.py's
// dotnet_app). Rounds and pauses are of random length (3:1 on average): rounds of a fixed length
// can beat against a profiler's fixed sampling interval. Prints "ready <pid>" after its first
// round (HotA and HotB are compiled then).
// `NetHot.exe late <ms>`: from <ms> ms after the start on, each round also calls HotLate (first
// JIT-compiled then: a method a session that began earlier sees compiled); `NetHot.exe
// late-file <path>`: the same once <path> exists. With it each round also calls Tiny, a method
// without loops (tiered: compiled at tier 0 first, re-compiled at tier 1 after 30 calls), 50 times.
using System;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading;

namespace PolyNet
{
    public static class Hot
    {
        static long sink;

        static void HotA(int rounds)
        {
            long n = 3L * 250000 * rounds;
            for (long i = 0; i < n; i++) sink += i;
        }

        static void HotB(int rounds)
        {
            long n = 250000L * rounds;
            for (long i = 0; i < n; i++) sink += i;
        }

        static void HotLate(int rounds)
        {
            long n = 250000L * rounds;
            for (long i = 0; i < n; i++) sink += i;
        }

        [MethodImpl(MethodImplOptions.NoInlining)]
        static long Tiny(long x)
        {
            return x * 3 + 1;
        }

        public static void Main(string[] args)
        {
            var rnd = new Random();
            long lateMs = args.Length > 1 && args[0] == "late" ? long.Parse(args[1]) : -1;
            string lateFile = args.Length > 1 && args[0] == "late-file" ? args[1] : null;
            bool late = false;
            var clock = Stopwatch.StartNew();
            bool first = true;
            while (true)
            {
                int r = rnd.Next(2, 7);
                HotA(r);
                HotB(r);
                if (!late)
                    late = (lateMs >= 0 && clock.ElapsedMilliseconds >= lateMs) ||
                           (lateFile != null && System.IO.File.Exists(lateFile));
                if (late)
                {
                    HotLate(r);
                    for (int k = 0; k < 50; k++)
                        sink += Tiny(k);
                }
                if (first)
                {
                    // after a first round: HotA and HotB are compiled once "ready" is read
                    Console.WriteLine("ready " + Process.GetCurrentProcess().Id);
                    Console.Out.Flush();
                    first = false;
                }
                Thread.Sleep(rnd.Next(2, 9));
            }
        }
    }
}
