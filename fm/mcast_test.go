package fm

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/client"

	"github.com/icn-hpc/icn/topology"
)

// A link failure moves only the trees that used the link; the moved trees
// avoid it and are stored, so a restart serves the same trees; a repair
// re-routes the trees it shortened and keeps the rest; every kept or moved
// tree is verified by the manager (min-hop depths on the current fabric).
func TestFailureMovesOnlyTreesThatUsedIt(t *testing.T) {
	dir := t.TempDir()
	clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s, _ := openTest(t, dir, "torus:8x8x4", clk)
	for k := 0; k < 12; k++ {
		gid := fmt.Sprintf("g%02d", k)
		members := []string{fmt.Sprintf("%d.%d.%d", k%8, (3*k)%8, k%4), fmt.Sprintf("%d.%d.%d", (k+4)%8, (k+1)%8, (k+2)%4),
			fmt.Sprintf("%d.%d.%d", (5*k+1)%8, (k+6)%8, (k+1)%4)}
		for _, mb := range members {
			if _, err := s.mc.join(context.Background(), "t", client.McastRequest{Group: gid, Member: mb, MemberCount: 3}); err != nil {
				t.Fatalf("join %s %s: %v", gid, mb, err)
			}
		}
	}
	before := s.mc.list()
	// The link most trees use.
	use := map[string][]string{}
	for _, g := range before {
		for _, c := range g.Channels {
			l := s.g.LinkName(int(c) >> 1)
			use[l] = append(use[l], g.ID)
		}
	}
	var link string
	for l, gs := range use {
		if link == "" || len(gs) > len(use[link]) || len(gs) == len(use[link]) && l < link {
			link = l
		}
	}
	hit := use[link]
	if len(hit) < 2 {
		t.Fatalf("busiest link %s is in %d trees", link, len(hit))
	}
	res, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: link})
	if err != nil {
		t.Fatal(err)
	}
	after := s.mc.list()
	// The answer names exactly the moved groups, with their old and new
	// roots and the size of the new tree.
	var said []string
	for _, e := range res.Groups {
		said = append(said, e.ID)
		i := slices.IndexFunc(after, func(g client.GroupRecord) bool { return g.ID == e.ID })
		if i < 0 || e.OldRoot != before[i].Root || e.NewRoot != after[i].Root || e.State != "Ready" || e.OldState != "Ready" ||
			e.Links != len(after[i].Edges) {
			t.Fatalf("group effect %+v; before %+v after %+v", e, before[i], after[i])
		}
	}
	if fmt.Sprint(said) != fmt.Sprint(hit) {
		t.Fatalf("the answer names groups %v; the link was in %v", said, hit)
	}
	moved := 0
	for i, g := range after {
		if g.State != "Ready" {
			t.Fatalf("group %s is %s after the failure: %s", g.ID, g.State, g.Reason)
		}
		for _, c := range g.Channels {
			if s.g.LinkName(int(c)>>1) == link {
				t.Fatalf("group %s still uses failed link %s", g.ID, link)
			}
		}
		same := slices.Equal(g.Channels, before[i].Channels)
		if slices.Contains(hit, g.ID) == same {
			t.Fatalf("group %s: used the link %v, tree unchanged %v", g.ID, slices.Contains(hit, g.ID), same)
		}
		if !same {
			moved++
		}
	}
	if moved != len(hit) {
		t.Fatalf("%d trees moved, %d used the link", moved, len(hit))
	}
	s.Close()
	s, _ = openTest(t, dir, "", clk)
	if got := s.mc.list(); fmt.Sprint(got) != fmt.Sprint(after) {
		t.Fatalf("restart changed the groups:\n%v\n%v", got, after)
	}
	if _, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: link, Repair: true}); err != nil {
		t.Fatal(err)
	}
	for i, g := range s.mc.list() {
		if g.State != "Ready" {
			t.Fatalf("group %s is %s after the repair", g.ID, g.State)
		}
		// Trees that never moved are kept; moved ones are checked again
		// (they are longer than the repaired fabric allows only if a
		// member's distance shrank, and then they are re-routed).
		if !slices.Contains(hit, g.ID) && !slices.Equal(g.Channels, before[i].Channels) {
			t.Fatalf("repair moved group %s, which never used the link", g.ID)
		}
	}
	s.Close()
}

// The same on a fat tree (a switched fabric): groups of hosts keep their
// FULB trees across a link failure unless the tree used the link.
func TestFailureMovesOnlyTreesThatUsedItFatTree(t *testing.T) {
	s, _ := openTest(t, t.TempDir(), "fattree:k=4,n=3", nil)
	defer s.Close()
	hosts := s.g.Endpoints()
	for k := 0; k < 8; k++ {
		gid := fmt.Sprintf("f%d", k)
		for i := 0; i < 3; i++ {
			m := s.g.NodeName(hosts[(k*5+i*7)%len(hosts)])
			if _, err := s.mc.join(context.Background(), "t", client.McastRequest{Group: gid, Member: m, MemberCount: 3}); err != nil {
				t.Fatalf("join %s %s: %v", gid, m, err)
			}
		}
	}
	before := s.mc.list()
	use := map[int][]string{}
	for _, g := range before {
		for _, c := range g.Channels {
			use[int(c)>>1] = append(use[int(c)>>1], g.ID)
		}
	}
	link := -1
	for l, gs := range use {
		lk := s.g.Link(l)
		inner := s.g.Kind(int(lk.A)) == topology.Switch && s.g.Kind(int(lk.B)) == topology.Switch
		if inner && (link < 0 || len(gs) > len(use[link]) || len(gs) == len(use[link]) && l < link) {
			link = l
		}
	}
	if link < 0 {
		t.Fatal("no switch link in any tree")
	}
	if _, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: s.g.LinkName(link)}); err != nil {
		t.Fatal(err)
	}
	for i, g := range s.mc.list() {
		used := slices.Contains(use[link], g.ID)
		if g.State != "Ready" || slices.Equal(g.Channels, before[i].Channels) == used {
			t.Fatalf("group %s (%s): used the link %v, tree kept %v", g.ID, g.State, used, !used)
		}
	}
}
