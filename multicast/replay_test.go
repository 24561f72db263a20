package multicast

import (
	"math"
	"strings"
	"testing"
)

// treeDistances returns, for every node of the tree, the links and the
// forwarding switches between the sender and it (BFS over the tree taken
// as undirected).
func treeDistances(f fabric, t Tree, sender int32) (links, switches map[int32]int) {
	adj := map[int32][]int32{}
	for _, c := range t.Edges {
		s, d := int32(f.g.Src(int(c))), int32(f.g.Dst(int(c)))
		adj[s] = append(adj[s], d)
		adj[d] = append(adj[d], s)
	}
	links, switches = map[int32]int{sender: 0}, map[int32]int{sender: 0}
	queue := []int32{sender}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, x := range adj[v] {
			if _, ok := links[x]; ok {
				continue
			}
			links[x] = links[v] + 1
			switches[x] = switches[v]
			if v != sender && f.h.RouterIndex(int(v)) >= 0 {
				switches[x]++
			}
			queue = append(queue, x)
		}
	}
	return links, switches
}

// Without contention every member gets the message after its tree
// distance in links and switches plus the packet length; the replay's
// zero-load mean equals that, and so does the loaded mean for one group.
func TestReplayZeroLoad(t *testing.T) {
	for _, spec := range []string{"fattree:k=4,n=3", "torus:4x4:endpoints=2", "dragonfly:a=4,p=2,h=2", "torus:3x3x3"} {
		f := loadFabric(t, spec)
		gs := testGroups(t, f, 3, 12)
		res, err := Run(f.h, Algo{Kind: FULB, Rotate: true}, gs, Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		o := ReplayOptions{Flits: 5, RouterDelay: 2, LinkDelay: 3, Messages: 1}
		for k := range gs {
			rr, err := Replay(f.g, f.h, gs[k:k+1], res.Trees[k:k+1], o)
			if err != nil {
				t.Fatal(err)
			}
			links, sw := treeDistances(f, res.Trees[k], gs[k].Members[0])
			sum, worst := 0, 0
			for _, m := range gs[k].Members[1:] {
				l := links[m]*o.LinkDelay + sw[m]*o.RouterDelay + o.Flits
				sum += l
				worst = max(worst, l)
			}
			n := len(gs[k].Members) - 1
			if rr.Deliveries != n {
				t.Fatalf("%s group %d: %d deliveries, want %d", spec, k, rr.Deliveries, n)
			}
			if n == 0 {
				continue
			}
			want := float64(sum) / float64(n)
			if math.Abs(rr.ZeroLoadMean-want) > 1e-9 || math.Abs(rr.Mean-want) > 1e-9 || rr.Max != int64(worst) {
				t.Fatalf("%s group %d: mean %v (zero-load %v), max %d; want %v, %d", spec, k, rr.Mean, rr.ZeroLoadMean, rr.Max, want, worst)
			}
		}
	}
}

// E groups with the same members share one tree (MINHOP-MC without
// rotation) and the same sender: their packets leave one after the other,
// so message i is exactly i·Flits late everywhere, as in the seed's EFI
// experiment.
func TestReplaySharedTree(t *testing.T) {
	f := loadFabric(t, "fattree:k=4,n=3")
	const e = 6
	var gs []Group
	for i := range e {
		gs = append(gs, Group{Name: string(rune('a' + i)), Members: []int32{0, 3, 9, 14}})
	}
	res, err := Run(f.h, Algo{Kind: MinHop}, gs, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Max != e {
		t.Fatalf("max EFI %d, want %d", res.Max, e)
	}
	o := ReplayOptions{Flits: 8, RouterDelay: 1, LinkDelay: 1, Messages: 1}
	rr, err := Replay(f.g, f.h, gs, res.Trees, o)
	if err != nil {
		t.Fatal(err)
	}
	one, _ := Replay(f.g, f.h, gs[:1], res.Trees[:1], o)
	wantMean := one.Mean + float64(o.Flits*(e-1))/2
	if rr.Deliveries != 3*e || math.Abs(rr.Mean-wantMean) > 1e-9 || rr.Max != one.Max+int64(o.Flits*(e-1)) {
		t.Fatalf("shared tree: %+v; one group %+v", rr, one)
	}
	// Two messages per sender: the second leaves Flits after the first.
	o.Messages = 2
	two, _ := Replay(f.g, f.h, gs[:1], res.Trees[:1], o)
	if two.Deliveries != 6 || two.Max != one.Max || two.Mean != one.Mean {
		t.Fatalf("back-to-back messages of one sender should not wait: %+v vs %+v", two, one)
	}
	if _, err := Replay(f.g, f.h, gs, res.Trees, ReplayOptions{}); err == nil {
		t.Fatal("zero flits accepted")
	}
}

// Background traffic: every packet is delivered along a real path, the
// multicast deliveries are all still made, the same seed gives the same
// replay, and bad loads are refused.
func TestReplayBackground(t *testing.T) {
	f := loadFabric(t, "fattree:k=4,n=3")
	gs := testGroups(t, f, 4, 10)
	res, err := Run(f.h, Algo{Kind: FULB, Rotate: true}, gs, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := ReplayOptions{Flits: 8, RouterDelay: 2, LinkDelay: 1, Messages: 1}
	quiet, _ := Replay(f.g, f.h, gs, res.Trees, o)
	o.Background, o.BackgroundCycles, o.Seed = 0.3, 2000, 7
	busy, err := Replay(f.g, f.h, gs, res.Trees, o)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Replay(f.g, f.h, gs, res.Trees, o)
	if *again != *busy {
		t.Fatalf("same seed, different replay: %+v vs %+v", busy, again)
	}
	// 64 end nodes offering 0.3 of a link over 2000 cycles in 8-flit
	// packets: about 4 800 packets.
	minLat := float64(2*o.LinkDelay + o.RouterDelay + o.Flits)
	if busy.BackgroundPackets < 4000 || busy.BackgroundPackets > 5600 || busy.BackgroundMean < minLat {
		t.Fatalf("background: %+v", busy)
	}
	if busy.Deliveries != quiet.Deliveries || busy.ZeroLoadMean != quiet.ZeroLoadMean {
		t.Fatalf("multicast deliveries changed: %+v vs %+v", busy, quiet)
	}
	o.Background = 1
	if _, err := Replay(f.g, f.h, gs, res.Trees, o); err == nil {
		t.Fatal("background load 1 accepted")
	}
	o.Background, o.BackgroundCycles = 0.9, 1<<24
	if _, err := Replay(f.g, f.h, gs, res.Trees, o); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("huge background accepted: %v", err)
	}
}
