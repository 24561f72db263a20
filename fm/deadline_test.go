package fm

import (
	"context"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/client"
)

// TestMulticastDeadlinesAbsolute: a group waiting for joins dies at its
// join time + timeout, even if the service restarts and the fabric
// changes in between (timeout 5 s in openTest).
func TestMulticastDeadlinesAbsolute(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, _ := openTest(t, dir, "torus:4x4x2", clk)
	g, err := s.mc.join(context.Background(), "t", client.McastRequest{Group: "w", Member: "0.0.0", MemberCount: 3})
	if err != nil || g.JoinDeadline == nil || !g.JoinDeadline.Equal(clk.Now().Add(5*time.Second)) {
		t.Fatalf("join: %+v %v", g, err)
	}
	clk.Add(3 * time.Second)
	if _, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: "1.1.1+X"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, _ = openTest(t, dir, "", clk) // restart 3 s after the join
	defer s.Close()
	clk.Add(1 * time.Second)
	s.Tick()
	if gs := s.mc.list(); len(gs) != 1 || gs[0].State != "ReceivingJoinReq" {
		t.Fatalf("4 s after the join: %+v", gs)
	}
	clk.Add(1 * time.Second) // 5 s after the join: the deadline
	s.Tick()
	if gs := s.mc.list(); len(gs) != 1 || gs[0].State != "Destroying" {
		t.Fatalf("the deadline moved: %+v", gs)
	}
	clk.Add(2 * time.Second) // linger
	s.Tick()

	// Leave deadlines likewise.
	for _, m := range []string{"0.0.0", "1.0.0"} {
		if _, err := s.mc.join(context.Background(), "t", client.McastRequest{Group: "l", Member: m, MemberCount: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.mc.leave(context.Background(), "t", client.McastRequest{Group: "l", Member: "0.0.0"}); err != nil {
		t.Fatal(err)
	}
	clk.Add(4 * time.Second)
	if _, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: "1.1.1+X", Repair: true}); err != nil {
		t.Fatal(err)
	}
	s.Tick()
	if gs := s.mc.list(); len(gs) != 1 || gs[0].State != "ReceivingLeaveReq" {
		t.Fatalf("4 s after the first leave: %+v", gs)
	}
	clk.Add(1 * time.Second)
	s.Tick()
	if gs := s.mc.list(); len(gs) != 1 || gs[0].State != "Destroying" {
		t.Fatalf("the leave deadline moved: %+v", gs)
	}
}
