package shmem

import (
	"errors"
	"net"
	"testing"
	"time"
)

// TestFlushNamesPeerWhileFailureRecorded: a write that fails while
// another goroutine is still recording the job's failure (its hook
// reports to the launcher before the failure is visible) returns an
// error naming the peer the write failed to, not the bare socket error
// (TestFaults once saw "writev …: broken pipe" from PE 0); once the
// failure is recorded, a failed write returns it.
func TestFlushNamesPeerWhileFailureRecorded(t *testing.T) {
	fs := newFailState()
	release := make(chan struct{})
	entered := make(chan struct{})
	hook := func(error) {
		close(entered)
		<-release
	}
	fs.hook.Store(&hook)
	go fs.set(&PEError{PE: 2, Reason: "connection lost without Finalize"})
	<-entered
	a, b := net.Pipe()
	b.Close()
	tr := &tcpTransport{fs: fs, timeout: time.Second}
	pc := &peerConn{t: tr, pe: 1, c: a, pending: map[uint32]*request{}}
	pc.enqueue([]byte{opBye}, nil)
	err := pc.flush()
	close(release)
	var pe *PEError
	if !errors.As(err, &pe) || pe.PE != 1 {
		t.Fatalf("flush to a closed peer while a failure is recorded: %v", err)
	}
	<-fs.done
	pc.enqueue([]byte{opBye}, nil)
	if err := pc.flush(); !errors.As(err, &pe) || pe.PE != 2 {
		t.Fatalf("flush after the failure was recorded: %v, want the recorded one", err)
	}
}
