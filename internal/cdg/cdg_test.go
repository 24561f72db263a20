package cdg

import (
	"math/rand/v2"
	"testing"
)

// bruteCycle reports whether any cycle exists, by DFS from every vertex.
func bruteCycle(n int, edges [][2]int32) bool {
	adj := make([][]int32, n)
	for _, e := range edges {
		adj[e[0]] = append(adj[e[0]], e[1])
	}
	for s := 0; s < n; s++ {
		seen := make([]bool, n)
		stack := append([]int32(nil), adj[s]...)
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if int(v) == s {
				return true
			}
			if !seen[v] {
				seen[v] = true
				stack = append(stack, adj[v]...)
			}
		}
	}
	return false
}

func TestDeadlockMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 500; trial++ {
		n := 1 + r.IntN(9)
		m := r.IntN(2 * n)
		g := New(n)
		var all, turns [][2]int32
		var tags []Tag
		for i := 0; i < m; i++ {
			a, b := int32(r.IntN(n)), int32(r.IntN(n))
			tag := Tag(r.IntN(2))
			g.Add(a, b, tag)
			all = append(all, [2]int32{a, b})
			tags = append(tags, tag)
			if tag == Turn {
				turns = append(turns, [2]int32{a, b})
			}
		}
		want := bruteCycle(n, all)
		cyc := g.Deadlock(false)
		if (cyc != nil) != want {
			t.Fatalf("trial %d: cycle=%v want %v edges=%v", trial, cyc, want, all)
		}
		if cyc != nil {
			checkCycle(t, all, cyc)
		}
		// Bubble: a cycle is bad iff some turn edge lies on a cycle, i.e.
		// turn edge a->b with b reaching a.
		wantBubble := false
		for _, e := range turns {
			if e[0] == e[1] || reach(n, all, e[1], e[0]) {
				wantBubble = true
			}
		}
		cyc = g.Deadlock(true)
		if (cyc != nil) != wantBubble {
			t.Fatalf("trial %d bubble: cycle=%v want %v edges=%v tags=%v", trial, cyc, wantBubble, all, tags)
		}
		if cyc != nil {
			checkCycle(t, all, cyc)
		}
	}
}

func reach(n int, edges [][2]int32, a, b int32) bool {
	seen := make([]bool, n)
	stack := []int32{a}
	seen[a] = true
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if v == b {
			return true
		}
		for _, e := range edges {
			if e[0] == v && !seen[e[1]] {
				seen[e[1]] = true
				stack = append(stack, e[1])
			}
		}
	}
	return false
}

func checkCycle(t *testing.T, edges [][2]int32, cyc []int32) {
	t.Helper()
	has := func(a, b int32) bool {
		for _, e := range edges {
			if e[0] == a && e[1] == b {
				return true
			}
		}
		return false
	}
	for i := range cyc {
		a, b := cyc[i], cyc[(i+1)%len(cyc)]
		if !has(a, b) {
			t.Fatalf("cycle %v uses missing edge %d->%d", cyc, a, b)
		}
	}
}
