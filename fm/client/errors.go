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
	// ErrBudget: a placement that did not finish within the placement
	// budget (409; nothing was placed).
	ErrBudget = errors.New("over budget")
	// ErrTimeout: the request body did not arrive in time (408).
	ErrTimeout = errors.New("request timeout")
	// ErrClosing: the service is closing (503; nothing was changed).
	ErrClosing = errors.New("the service is closing")
	// ErrNotLeader: a change sent to an instance that does not lead
	// (307 to the leader, or 503 while none is elected; nothing was
	// changed).
	ErrNotLeader = errors.New("not the leader")
)
