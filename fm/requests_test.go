package fm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"
)

// TestRequestIDs: a request repeated with its id gets the first answer
// (Replayed), across a restart, without a second placement or join; an
// id is refused for another kind of request and when too long; answers
// older than a day are forgotten.
func TestRequestIDs(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, _ := openTest(t, dir, "torus:4x4x2", clk)
	ctx := context.Background()
	j, err := s.SubmitContext(ctx, "t", client.JobRequest{Nodes: 4, RequestID: "job-a"})
	if err != nil || j.Replayed {
		t.Fatalf("first submit: %+v %v", j, err)
	}
	g, err := s.Join(ctx, "t", client.McastRequest{Group: "g", Member: "0.0.0", MemberCount: 2, RequestID: "join-a"})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, _ = openTest(t, dir, "", clk)
	defer s.Close()
	again, err := s.SubmitContext(ctx, "t", client.JobRequest{Nodes: 4, RequestID: "job-a"})
	if err != nil || !again.Replayed || again.ID != j.ID || !slicesEqual(again.Active, j.Active) {
		t.Fatalf("repeated submit: %+v %v", again, err)
	}
	if jobs, _ := s.Jobs(false); len(jobs) != 1 {
		t.Fatalf("%d jobs after a repeated submit", len(jobs))
	}
	g2, err := s.Join(ctx, "t", client.McastRequest{Group: "g", Member: "0.0.0", MemberCount: 2, RequestID: "join-a"})
	if err != nil || !g2.Replayed || len(g2.Members) != len(g.Members) {
		t.Fatalf("repeated join: %+v %v", g2, err)
	}
	// Without its id the same join is a duplicate.
	if _, err := s.Join(ctx, "t", client.McastRequest{Group: "g", Member: "0.0.0", MemberCount: 2}); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("duplicate join without an id: %v", err)
	}
	// A join whose group has ended since: repeated, it gets its first
	// answer, not a new group.
	first, err := s.Join(ctx, "t", client.McastRequest{Group: "h", Member: "1.1.0", MemberCount: 1, RequestID: "join-b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Leave(ctx, "t", client.McastRequest{Group: "h", Member: "1.1.0"}); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Minute) // the group lingers, then goes
	s.Tick()
	if _, err := s.Group("h"); err == nil {
		t.Fatal("group h still there")
	}
	again2, err := s.Join(ctx, "t", client.McastRequest{Group: "h", Member: "1.1.0", MemberCount: 1, RequestID: "join-b"})
	if err != nil || !again2.Replayed || again2.Created != first.Created {
		t.Fatalf("a join repeated after its group ended: %+v %v", again2, err)
	}
	if _, err := s.Group("h"); err == nil {
		t.Fatal("the repeated join made a new group")
	}
	if _, err := s.SubmitContext(ctx, "t", client.JobRequest{Nodes: 1, RequestID: "join-a"}); !errors.Is(err, client.ErrConflict) {
		t.Fatalf("an id used for a join, sent with a submit: %v", err)
	}
	if _, err := s.SubmitContext(ctx, "t", client.JobRequest{Nodes: 1, RequestID: strings.Repeat("x", client.MaxRequestID+1)}); !errors.Is(err, client.ErrBadRequest) {
		t.Fatalf("a request id too long: %v", err)
	}
	clk.Add(requestTTL + time.Minute)
	s.expireRequests(ctx)
	var left int
	s.store.View(ctx, func(tx *store.Tx) error {
		for _, id := range []string{"job-a", "join-a", "join-b"} {
			if o, _ := tx.Request(id); o != nil {
				left++
			}
		}
		return nil
	})
	if left != 0 {
		t.Fatalf("%d answers older than a day kept", left)
	}
	j3, err := s.SubmitContext(ctx, "t", client.JobRequest{Nodes: 4, RequestID: "job-a"})
	if err != nil || j3.Replayed || j3.ID == j.ID {
		t.Fatalf("an expired id: %+v %v", j3, err)
	}
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
