package store

import (
	"errors"
)

// kvTx is one transaction on an ordered key-value backend with buckets:
// bbolt (one file) or etcd (a key prefix). Keys within a bucket are
// ordered bytewise. Records are encoded, framed and checked above this
// layer, so both backends keep the same bytes and pass the same checks.
type kvTx interface {
	// Get returns a copy of the value of key in bucket (nil if absent).
	Get(bucket, key []byte) ([]byte, error)
	// Peek is Get without the copy where the backend can give the value
	// in place: valid until the transaction ends, never to be changed.
	Peek(bucket, key []byte) ([]byte, error)
	// Put sets key in bucket (write transactions only).
	Put(bucket, key, value []byte) error
	// Delete removes key from bucket (absent keys are no error).
	Delete(bucket, key []byte) error
	// ForEach calls fn for every key ≥ from in bucket, in key order; the
	// slices are valid during the call only. fn's error stops the walk
	// and is returned.
	ForEach(bucket, from []byte, fn func(k, v []byte) error) error
	// NextSequence returns the bucket's next sequence number (1, 2, …),
	// committed with the transaction.
	NextSequence(bucket []byte) (uint64, error)
	// Sequence returns the bucket's last sequence number.
	Sequence(bucket []byte) (uint64, error)
	// SetSequence sets the bucket's sequence number (copies of a store).
	SetSequence(bucket []byte, n uint64) error
	// Term is the leadership term a write transaction commits under (0
	// on a store of one instance).
	Term() int64
	// Absent makes the transaction commit only if key is absent from
	// bucket when it commits; it fails with ErrExists otherwise (at once,
	// or at the commit).
	Absent(bucket, key []byte) error
}

// ErrNotLeader is returned by writes of a replicated store whose
// instance does not hold leadership (never elected, or deposed: its
// lease expired or another instance was elected); nothing was written.
var ErrNotLeader = errors.New("not the leader")

// ErrUnavailable is returned when the replicated store cannot be reached;
// for a write, whether it was applied is unknown.
var ErrUnavailable = errors.New("store unavailable")

// ErrExists is returned by a transaction that requires a key to be
// absent (Tx.PutRequest) when it is there; nothing was written.
var ErrExists = errors.New("already stored")

// ErrTooLarge is returned for a change larger than the store accepts in
// one transaction.
var ErrTooLarge = errors.New("change too large for one transaction")
