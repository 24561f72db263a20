//go:build !long

package sim

// longTests is false in the default run: the experiments keep a small
// version of each check (go test -tags long runs the full ones).
const longTests = false
