//go:build long

package sim

// longTests runs the full-length experiments (go test -tags long).
const longTests = true
