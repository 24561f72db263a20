package multicast

import (
	"fmt"
	"reflect"
	"testing"
)

// adjacentGroups returns e groups of four consecutive end nodes (the
// seed's EFI experiment: group i is end nodes 4i … 4i+3).
func adjacentGroups(t *testing.T, f fabric, e int) []Group {
	t.Helper()
	ends := f.g.Endpoints()
	if 4*e > len(ends) {
		t.Fatalf("%s: %d groups of 4 need %d end nodes, have %d", f.spec, e, 4*e, len(ends))
	}
	gs := make([]Group, e)
	for i := range gs {
		gs[i] = Group{Name: fmt.Sprintf("g%d", i)}
		for j := range 4 {
			gs[i].Members = append(gs[i].Members, int32(ends[4*i+j]))
		}
	}
	return gs
}

// randomGroups returns count groups of 2 … 8 random end nodes.
func randomGroups(t *testing.T, f fabric, seed uint64, count int) []Group {
	t.Helper()
	w, err := ParseWorkload(fmt.Sprintf("random:count=%d,size=2-8", count))
	if err != nil {
		t.Fatal(err)
	}
	gs, err := w.Groups(f.g, seed)
	if err != nil {
		t.Fatal(err)
	}
	return gs
}

// With zero host options ReplayHost is Replay, loaded or not.
func TestReplayHostZeroIsReplay(t *testing.T) {
	f := loadFabric(t, "fattree:k=4,n=3")
	gs := testGroups(t, f, 7, 10)
	res, err := Run(f.h, Algo{Kind: MinHop}, gs, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := ReplayOptions{Flits: 4, RouterDelay: 2, LinkDelay: 1, Messages: 3, AllSend: true}
	a, err := Replay(f.g, f.h, gs, res.Trees, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReplayHost(f.g, f.h, gs, res.Trees, o, HostOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("ReplayHost with no hosts %+v, Replay %+v", b, a)
	}
}

// One message per sender: every sender spends the same overhead before
// injecting, so the network sees the same schedule and every latency
// (mean, p99, max, zero-load, completion) grows by exactly 2·overhead,
// on a trivial tree (four nodes under one switch) and on a loaded one;
// the closed loop changes nothing when there is one message.
func TestReplayHostOverheadAddsTwice(t *testing.T) {
	f := loadFabric(t, "fattree:k=4,n=3")
	for _, gs := range [][]Group{adjacentGroups(t, f, 1), randomGroups(t, f, 3, 12)} {
		res, err := Run(f.h, Algo{Kind: MinHop}, gs, Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		o := ReplayOptions{Flits: 8, RouterDelay: 3, LinkDelay: 2, Messages: 1, AllSend: true}
		base, err := Replay(f.g, f.h, gs, res.Trees, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, ho := range []HostOptions{{Overhead: 1}, {Overhead: 350}, {Overhead: 350, ClosedLoop: true}} {
			r, err := ReplayHost(f.g, f.h, gs, res.Trees, o, ho)
			if err != nil {
				t.Fatal(err)
			}
			d := 2 * float64(ho.Overhead)
			if r.Deliveries != base.Deliveries || r.Mean != base.Mean+d || r.ZeroLoadMean != base.ZeroLoadMean+d ||
				r.CompletionMean != base.CompletionMean+d || float64(r.P99) != float64(base.P99)+d ||
				float64(r.Max) != float64(base.Max)+d || float64(r.Cycles) != float64(base.Cycles)+d {
				t.Fatalf("%d groups, %+v: %+v; without hosts %+v", len(gs), ho, r, base)
			}
		}
	}
	if _, err := ReplayHost(f.g, f.h, nil, nil, ReplayOptions{Flits: 1, LinkDelay: 1, Messages: 1}, HostOptions{Overhead: -1}); err == nil {
		t.Fatal("negative overhead accepted")
	}
	if _, err := ReplayHost(f.g, f.h, nil, nil, ReplayOptions{Flits: 1, LinkDelay: 1, Messages: 1, Background: 0.1, BackgroundCycles: 10},
		HostOptions{ClosedLoop: true}); err == nil {
		t.Fatal("closed loop with background accepted")
	}
}

// One group alone, N messages: nothing waits, so every message has the
// one-message latency L; back to back they leave max(flits, overhead)
// apart, in a closed loop L + 2·overhead apart.
func TestReplayHostPacing(t *testing.T) {
	f := loadFabric(t, "fattree:k=4,n=3")
	gs := randomGroups(t, f, 1, 1)
	res, err := Run(f.h, Algo{Kind: FULB, Rotate: true}, gs, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n, over = 5, 40
	o := ReplayOptions{Flits: 8, RouterDelay: 2, LinkDelay: 1, Messages: 1}
	one, err := ReplayHost(f.g, f.h, gs, res.Trees, o, HostOptions{Overhead: over})
	if err != nil {
		t.Fatal(err)
	}
	last := one.Cycles // the last member's latency, overheads included
	o.Messages = n
	for _, closed := range []bool{false, true} {
		r, err := ReplayHost(f.g, f.h, gs, res.Trees, o, HostOptions{Overhead: over, ClosedLoop: closed})
		if err != nil {
			t.Fatal(err)
		}
		want := int64((n-1)*over) + last
		if closed {
			want = n * last
		}
		if r.Deliveries != n*one.Deliveries || r.Mean != one.Mean || r.Max != one.Max || r.Cycles != want {
			t.Fatalf("closed %v: %+v, want every message like %+v and %d cycles", closed, r, one, want)
		}
	}
}

// A shared tree over every end node is the same tree whatever the groups:
// equal height for 1 … 16 groups, EFI = groups on every tree link, and
// each group's packets are delivered to its own members only. The union
// tree reaches every member of every group.
func TestSharedTree(t *testing.T) {
	f := loadFabric(t, "fattree:k=4,n=3")
	height := -1
	var first *Tree
	var every []int32
	for _, v := range f.g.Endpoints() {
		every = append(every, int32(v))
	}
	for _, e := range []int{1, 2, 4, 16} {
		gs := adjacentGroups(t, f, e)
		r, err := SharedTree(f.h, Algo{Kind: MinHop}, gs, SharedAll)
		if err != nil {
			t.Fatal(err)
		}
		if height < 0 {
			height = r.MaxHeight
		}
		if r.MaxHeight != height || r.Max != e || r.Groups != e || !r.Verified {
			t.Fatalf("%d groups: height %d (first %d), max EFI %d", e, r.MaxHeight, height, r.Max)
		}
		for l, x := range r.EFI {
			if x != 0 && int(x) != e {
				t.Fatalf("%d groups: link %d has EFI %d", e, l, x)
			}
		}
		if first == nil {
			first = &r.Trees[0]
		}
		if !reflect.DeepEqual(r.Trees[0], *first) {
			t.Fatalf("%d groups: the shared tree changed", e)
		}
		if err := NewVerifier(f.h).VerifyShape(every, r.Trees[0]); err != nil {
			t.Fatalf("%d groups: %v", e, err)
		}
		rr, err := ReplayHost(f.g, f.h, gs, r.Trees, ReplayOptions{Flits: 2, RouterDelay: 1, LinkDelay: 1, Messages: 1}, HostOptions{Overhead: 5})
		if err != nil {
			t.Fatal(err)
		}
		if rr.Deliveries != 3*e {
			t.Fatalf("%d groups: %d deliveries, want %d", e, rr.Deliveries, 3*e)
		}
	}
	gs := testGroups(t, f, 5, 8)
	r, err := SharedTree(f.h, Algo{Kind: FULB, Rotate: true}, gs, SharedUnion)
	if err != nil {
		t.Fatal(err)
	}
	v := NewVerifier(f.h)
	for _, gr := range gs {
		if err := v.VerifyShape(gr.Members, r.Trees[0]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ParseSharedScope("most"); err == nil {
		t.Fatal("scope most accepted")
	}
}

// In a closed loop on a shared tree every round puts all E groups' packets
// on every end node's link, so the mean latency grows with E, and the
// replay is deterministic.
func TestSharedTreeClosedLoopGrows(t *testing.T) {
	f := loadFabric(t, "fattree:k=4,n=3")
	o := ReplayOptions{Flits: 16, RouterDelay: 2, LinkDelay: 1, Messages: 6}
	ho := HostOptions{Overhead: 20, ClosedLoop: true}
	prev := 0.0
	for _, e := range []int{1, 4, 16} {
		gs := adjacentGroups(t, f, e)
		r, err := SharedTree(f.h, Algo{Kind: MinHop}, gs, SharedAll)
		if err != nil {
			t.Fatal(err)
		}
		a, err := ReplayHost(f.g, f.h, gs, r.Trees, o, ho)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := ReplayHost(f.g, f.h, gs, r.Trees, o, ho)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%d groups: two replays differ: %+v, %+v", e, a, b)
		}
		if a.Deliveries != 3*e*o.Messages || a.Mean <= prev || a.ZeroLoadMean > a.Mean {
			t.Fatalf("%d groups: %+v after mean %v", e, a, prev)
		}
		prev = a.Mean
	}
}
