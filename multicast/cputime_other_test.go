//go:build !linux

package multicast

// threadCPU is not available here: CPU-time metrics read 0.
func threadCPU() float64 { return 0 }
