// Integration fixture: a .NET program with two hot methods in a 3:1 ratio (PolyNet.Hot.HotA and
// HotB), compiled by Debian's mcs and run on the .NET Core runtime of `make deps` (conftest.py's
// dotnet_app). Rounds and pauses are of random length (3:1 on average): rounds of a fixed length
// can beat against a profiler's fixed sampling interval. Prints "ready <pid>" once running.
using System;
using System.Diagnostics;
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

        public static void Main(string[] args)
        {
            var rnd = new Random();
            Console.WriteLine("ready " + Process.GetCurrentProcess().Id);
            Console.Out.Flush();
            while (true)
            {
                int r = rnd.Next(2, 7);
                HotA(r);
                HotB(r);
                Thread.Sleep(rnd.Next(2, 9));
            }
        }
    }
}
