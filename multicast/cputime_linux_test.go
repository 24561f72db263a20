package multicast

import "syscall"

// threadCPU returns the CPU time consumed by the calling OS thread (Linux
// RUSAGE_THREAD); callers lock the goroutine to its thread.
func threadCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
