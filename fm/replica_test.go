package fm

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"
	"github.com/icn-hpc/icn/internal/etcdtest"
)

// openReplica opens an instance of the etcd store at url.
func openReplica(t *testing.T, url, name, tokenFile, topo string, clk *fakeClock, uni *UnicastConfig) *Service {
	t.Helper()
	cfg, err := store.ParseEtcdURL(url)
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := Open(Config{Etcd: &cfg, TokenFile: tokenFile, Lease: 2 * time.Second, Name: name, URL: "http://" + name,
		Rules: "angara*", Topo: topo, NewRouting: AngaraRouting("angara*"), Now: clk.Now, MulticastTimeout: 30 * time.Second,
		Unicast: uni})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// waitFor polls cond until it holds (or fails the test after a while).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStandbyFollowsAndTakesOver runs two instances on one etcd store:
// the standby's state follows every change of the leader (jobs with
// their tables, failures, groups), changes sent to it are refused with
// ErrNotLeader naming the leader, and when the leader closes it takes
// over with everything: jobs, the answer to a request id (no second
// placement), and the multicast deadlines as stored (not restarted at the
// takeover).
func TestStandbyFollowsAndTakesOver(t *testing.T) {
	c := etcdtest.Start(t, 1)
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	url := c.URL("icn/replica")
	a := openReplica(t, url, "a", tok, "torus:4x4x4", clk, nil)
	waitFor(t, "a to lead", func() bool { return a.Health().Role == "leader" })
	b := openReplica(t, url, "b", tok, "", clk, nil)
	ctx := context.Background()
	j, err := a.SubmitContext(ctx, "t", client.JobRequest{Nodes: 6, Transit: 2, RequestID: "first"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.ChangeFailure(ctx, "t", client.FailureChange{Link: j.Active[0] + "+X"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Join(ctx, "t", client.McastRequest{Group: "g", Member: "0.0.0", MemberCount: 2}); err != nil {
		t.Fatal(err)
	}
	// The standby follows: its state equals the leader's.
	waitFor(t, "b to follow", func() bool {
		return b.Health().Revision >= a.Health().Revision && len(b.Groups()) == 1
	})
	if ma, mb := memoryState(t, a), memoryState(t, b); !reflect.DeepEqual(ma, mb) {
		t.Fatalf("the standby's state differs:\n%+v\n%+v", ma, mb)
	}
	ja, _ := a.Job(j.ID)
	jb, err := b.Job(j.ID)
	if err != nil || !reflect.DeepEqual(ja.Table, jb.Table) {
		t.Fatalf("the standby's table of job %d differs (%v)", j.ID, err)
	}
	if h := b.Health(); h.Role != "standby" || h.Leader != "http://a" || h.Lag < 0 {
		t.Fatalf("standby's health %+v", h)
	}
	if _, err := b.SubmitContext(ctx, "t", client.JobRequest{Nodes: 2}); err == nil || !errors.Is(err, client.ErrNotLeader) {
		t.Fatalf("a submit to the standby: %v", err)
	}
	clk.Add(10 * time.Second)
	a.Close() // gives the leadership up: b takes over at once
	waitFor(t, "b to lead", func() bool { return b.Health().Role == "leader" })
	again, err := b.SubmitContext(ctx, "t", client.JobRequest{Nodes: 6, Transit: 2, RequestID: "first"})
	if err != nil || again.ID != j.ID || !again.Replayed {
		t.Fatalf("the request id repeated to the new leader: %+v %v", again, err)
	}
	// The group's join deadline is 30 s after its join, as stored.
	clk.Add(19 * time.Second)
	b.Tick()
	if g, err := b.Group("g"); err != nil || g.State == "Destroying" {
		t.Fatalf("29 s after the join: %+v %v", g, err)
	}
	clk.Add(2 * time.Second)
	b.Tick()
	if g, err := b.Group("g"); err == nil && g.State != "Destroying" {
		t.Fatalf("31 s after the join the group lives on: %+v", g)
	}
	j2, err := b.SubmitContext(ctx, "t", client.JobRequest{Nodes: 2})
	if err != nil || j2.ID != j.ID+1 {
		t.Fatalf("the new leader's first job: %+v %v", j2, err)
	}
	ev, err := b.Audit(0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range ev {
		if e.Seq != uint64(i+1) {
			t.Fatalf("audit entry %d has seq %d", i+1, e.Seq)
		}
	}
}

// TestUnicastTablesAreTheLeaders: on a switched fabric with unicast
// tables, only the leader writes the dump OpenSM loads; the standby
// writes it when it takes over.
func TestUnicastTablesAreTheLeaders(t *testing.T) {
	c := etcdtest.Start(t, 1)
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	clk := &fakeClock{t: time.Now()}
	url := c.URL("icn/lft")
	dumpA, dumpB := filepath.Join(dir, "a.dump"), filepath.Join(dir, "b.dump")
	a := openReplica(t, url, "a", tok, "fattree:k=4,n=3", clk, &UnicastConfig{Engine: "ftree", LFTOut: dumpA})
	waitFor(t, "a to lead", func() bool { return a.Health().Role == "leader" })
	waitFor(t, "a's dump", func() bool { _, err := os.Stat(dumpA); return err == nil })
	b := openReplica(t, url, "b", tok, "", clk, &UnicastConfig{Engine: "ftree", LFTOut: dumpB})
	if _, err := a.ChangeFailure(context.Background(), "t", client.FailureChange{Link: switchLinks(a.g)[0]}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b to follow", func() bool { return b.Health().Revision >= a.Health().Revision })
	if _, err := os.Stat(dumpB); err == nil {
		t.Fatal("the standby wrote the unicast tables")
	}
	a.Close()
	waitFor(t, "b to lead and write the tables", func() bool {
		_, err := os.Stat(dumpB)
		return b.Health().Role == "leader" && err == nil
	})
	wa, _ := os.ReadFile(dumpA)
	wb, _ := os.ReadFile(dumpB)
	if string(wa) != string(wb) {
		t.Error("the new leader's tables differ from the old leader's on the same fabric")
	}
}
