package shmem

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Errors returned for misuse. They are returned (never panicked) and leave
// the World usable unless stated otherwise.
var (
	// ErrNotInitialized is returned by the package-level functions before
	// Init (or after Finalize).
	ErrNotInitialized = errors.New("shmem: not initialized (call shmem.Init first)")
	// ErrFinalized is returned by every call on a World after Finalize.
	ErrFinalized = errors.New("shmem: world already finalized")
)

// PEError reports that a peer process failed: it died, exited without
// Finalize, stopped sending heartbeats, broke its connection or declared
// itself failed (for example after a mismatched collective call). Once a
// World has seen a PEError every later call on it returns the same error.
type PEError struct {
	PE     int    // the failed process, -1 if unknown
	Reason string // what was observed
}

func (e *PEError) Error() string {
	if e.PE < 0 {
		return "shmem: job failed: " + e.Reason
	}
	return fmt.Sprintf("shmem: PE %d failed: %s", e.PE, e.Reason)
}

// CollectiveError reports collective calls that do not match across the
// processes (different kinds of collective, different member lists or
// different sizes). Mismatched barriers poison the World (the collective
// state is no longer consistent) and the other members get a PEError naming
// the PE that detected the mismatch; mismatched CoarrayAll sizes are detected
// by every member at once and leave the World usable.
type CollectiveError struct {
	Op     string
	Detail string
}

func (e *CollectiveError) Error() string {
	return "shmem: mismatched collective " + e.Op + ": " + e.Detail
}

// failState is the sticky failure of a World shared with its transport.
// The hook (report to the launcher, tell the peers) runs before the error
// becomes visible, so a program that exits on the error has told the
// others first; a failure raised while the hook runs is ignored.
type failState struct {
	mu      sync.Mutex
	setting bool
	err     atomic.Pointer[error]
	done    chan struct{} // closed on failure
	hook    atomic.Pointer[func(error)]
}

func newFailState() *failState { return &failState{done: make(chan struct{})} }

// set records err as the World's failure; the first one wins. It reports
// whether this call was the first.
func (f *failState) set(err error) bool {
	f.mu.Lock()
	if f.setting {
		f.mu.Unlock()
		return false
	}
	f.setting = true
	f.mu.Unlock()
	if h := f.hook.Load(); h != nil {
		(*h)(err)
	}
	f.err.Store(&err)
	close(f.done)
	return true
}

// get returns the failure, or nil.
func (f *failState) get() error {
	if p := f.err.Load(); p != nil {
		return *p
	}
	return nil
}
