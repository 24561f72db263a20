package fm

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"
)

// Requests with an id (a job placement, a multicast join) are safe to
// repeat: the answer to the first is stored with its change, in the same
// transaction, and a repeated id gets that answer again (Replayed set)
// instead of a second change, across restarts and takeovers. Answers are
// kept for requestTTL.
const requestTTL = 24 * time.Hour

// checkRequestID refuses a request id that is too long or not text.
func checkRequestID(id string) error {
	if len(id) > client.MaxRequestID {
		return badRequest("request_id longer than %d bytes", client.MaxRequestID)
	}
	for _, c := range id {
		if c < ' ' || c == 0x7f {
			return badRequest("request_id holds control characters")
		}
	}
	return nil
}

// outcomeOf is the stored answer of a request.
func outcomeOf(action string, answer any) (*store.Outcome, error) {
	body, err := json.Marshal(answer)
	if err != nil {
		return nil, err
	}
	return &store.Outcome{Action: action, Body: body}, nil
}

// answered reports whether a request with this id was answered already,
// and decodes its answer into out. An id answered for another kind of
// request is refused.
func (s *Service) answered(id, action string, out any) (bool, error) {
	var o *store.Outcome
	_, err := s.store.View(context.Background(), func(tx *store.Tx) error {
		var err error
		o, err = tx.Request(id)
		return err
	})
	if err != nil || o == nil {
		return false, err
	}
	if o.Action != action {
		return false, fmt.Errorf("%w: request_id %q was used for a %s request", client.ErrConflict, id, o.Action)
	}
	if err := json.Unmarshal(o.Body, out); err != nil {
		return false, fmt.Errorf("request %q: stored answer: %v", id, err)
	}
	return true, nil
}

// expireRequests forgets the answers to requests older than requestTTL
// (at most 1000 at a time; the leader's periodic work).
func (s *Service) expireRequests(ctx context.Context) {
	var n int
	s.commit(ctx, "system", func(tx *store.Tx) error {
		var err error
		n, err = tx.ExpireRequests(s.cfg.Now().Add(-requestTTL), 1000)
		return err
	})
	_ = n
}

// expireRequestsEvery runs expireRequests at most once per interval.
func (s *Service) expireRequestsEvery(ctx context.Context, interval time.Duration) {
	now := time.Now().UnixNano()
	last := s.expired.Load()
	if now-last < int64(interval) || !s.expired.CompareAndSwap(last, now) {
		return
	}
	s.expireRequests(ctx)
}
