package design

import "fmt"

// SearchDiffSet looks for k residues mod n, containing 0 and 1, whose
// ordered differences cover every non-zero residue r exactly target[r]
// times (target[r] = λ for a difference set; other targets give "quasi"
// designs such as the seed's DFS(39,7,1|2)). Containing 0 and 1 loses
// nothing when target[1] ≥ 1: translate a pair with difference 1 to 0, 1.
// Backtracking adds elements in increasing order and cuts as soon as a
// difference would occur too often. It stops after budget search nodes;
// exhausted reports whether the whole space was searched (so nil, true
// proves that no such set exists).
func SearchDiffSet(n, k int, target []int, budget int64) (d []int, exhausted bool) {
	if n < 3 || k < 2 || k > n || len(target) != n || target[1] < 1 {
		return nil, true
	}
	sum := 0
	for r := 1; r < n; r++ {
		if target[r] != target[n-r] {
			return nil, true // differences come in pairs ±r
		}
		sum += target[r]
	}
	if sum != k*(k-1) {
		return nil, true
	}
	cnt := make([]int, n)
	cur := []int{0, 1}
	cnt[1]++
	cnt[n-1]++
	if cnt[1] > target[1] || cnt[n-1] > target[n-1] {
		return nil, true
	}
	nodes := int64(0)
	var rec func() bool
	rec = func() bool {
		if len(cur) == k {
			return true
		}
		last := cur[len(cur)-1]
		for x := last + 1; x <= n-(k-len(cur)); x++ {
			nodes++
			if nodes > budget {
				return false
			}
			ok := true
			i := 0
			for ; i < len(cur); i++ {
				a := x - cur[i]
				cnt[a]++
				cnt[n-a]++
				if cnt[a] > target[a] || cnt[n-a] > target[n-a] {
					ok = false
					i++
					break
				}
			}
			if ok {
				cur = append(cur, x)
				if rec() {
					return true
				}
				cur = cur[:len(cur)-1]
			}
			for j := 0; j < i; j++ {
				a := x - cur[j]
				cnt[a]--
				cnt[n-a]--
			}
		}
		return false
	}
	if rec() {
		return cur, true
	}
	return nil, nodes <= budget
}

// QuasiTarget returns the difference multiplicities of a cyclic "λ|λ'"
// design: every non-zero residue λ times except ±1, …, ±extra, which occur
// λ+1 times (the seed's DFS(39,7,1|2): each subscriber has a second path to
// the four subscribers i±1, i±2).
func QuasiTarget(n, lambda, extra int) ([]int, error) {
	if extra < 0 || 2*extra >= n {
		return nil, fmt.Errorf("extra=%d out of range for N=%d", extra, n)
	}
	t := make([]int, n)
	for r := 1; r < n; r++ {
		t[r] = lambda
	}
	for r := 1; r <= extra; r++ {
		t[r]++
		t[n-r]++
	}
	return t, nil
}
