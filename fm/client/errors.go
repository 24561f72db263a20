package client

import "errors"

// The kinds of error the fabric manager answers with; each has its HTTP
// status (the service wraps them, the HTTP layer maps them).
var (
	// ErrBadRequest: the request is invalid (400).
	ErrBadRequest = errors.New("bad request")
	// ErrNotFound: an unknown job, group, node or link (404).
	ErrNotFound = errors.New("not found")
	// ErrConflict: a valid request that cannot be satisfied now (409).
	ErrConflict = errors.New("conflict")
	// ErrBudget: the placement budget ended before node selection
	// found any set (409 with kind "budget"; nothing was placed): a
	// longer budget may find one. The message says how many placements
	// were examined.
	ErrBudget = errors.New("budget too short")
	// ErrTimeout: the request body did not arrive in time (408).
	ErrTimeout = errors.New("request timeout")
	// ErrClosing: the service is closing (503; nothing was changed).
	ErrClosing = errors.New("the service is closing")
	// ErrNotLeader: a change sent to an instance that does not lead
	// (307 to the leader, or 503 while none is elected; nothing was
	// changed).
	ErrNotLeader = errors.New("not the leader")
)

// The kinds of error answer: the "kind" of an error's JSON body, one per
// error above (the HTTP status alone does not tell a budget too short
// from a conflict), plus storage and internal failures (503, 500).
const (
	KindBadRequest = "bad_request"
	KindNotFound   = "not_found"
	KindConflict   = "conflict"
	KindBudget     = "budget"
	KindTimeout    = "timeout"
	KindClosing    = "closing"
	KindNotLeader  = "not_leader"
	KindStorage    = "storage"
	KindTooLarge   = "too_large"
	KindCancelled  = "cancelled"
	KindInternal   = "internal"
)
