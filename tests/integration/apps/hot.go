// Integration fixture: a Go program with two hot functions in a 3:1 ratio of CPU time.
package main

import (
	"fmt"
	"math/rand"
	"os"
	"time"
)

var sink uint64

//go:noinline
func hotGoA() {
	for i := uint64(0); i < 3000000; i++ {
		sink += i
	}
}

//go:noinline
func hotGoB() {
	for i := uint64(0); i < 1000000; i++ {
		sink += i
	}
}

func main() {
	fmt.Printf("ready %d\n", os.Getpid())
	// About one third duty cycle, so that the test host (2 cores) is not oversubscribed. The
	// sleep is randomised (1x to 3x the work): a fixed 2x made the cycle phase-lock with the
	// sampler's clock, which then saw hotGoA:hotGoB as 2:1 in some runs.
	for {
		t := time.Now()
		hotGoA()
		hotGoB()
		time.Sleep(time.Duration(float64(time.Since(t)) * (1 + 2*rand.Float64())))
	}
}
