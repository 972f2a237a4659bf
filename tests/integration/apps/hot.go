// Integration fixture: a Go program with two hot functions in a 3:1 ratio of CPU time.
package main

import (
	"fmt"
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
	// About one third duty cycle, so that the test host (2 cores) is not oversubscribed.
	for {
		t := time.Now()
		hotGoA()
		hotGoB()
		time.Sleep(2 * time.Since(t))
	}
}
