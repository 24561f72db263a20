package routing

import (
	"context"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// TestVerifySharedWalk checks that verifying a table by segments shared
// between consecutive routes (quickShared) reports exactly what checking
// route by route does: on tori with and without mesh dimensions and
// failed links, for tables of random sets, intact and with random codes
// corrupted (counts changed, FS/LS steps changed or out of range,
// routes swapped, runs around a ring).
func TestVerifySharedWalk(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 5))
	cases := []struct {
		spec, fail string
		kind       Kind
	}{
		{"torus:6x5x4", "", AngaraStar},
		{"torus:4x4x3:mesh=Y", "", Angara},
		{"torus:6x4x4x3", "", AngaraStar},
		{"torus:6x6x4", "0.0.0+X,2.3.1+Y,5.5.3-Z", AngaraStar},
		{"torus:5x4x2:mesh=X,Z", "", AngaraMinus},
		{"torus:5x5x3", "1.1.1+Z", DOR},
		{"torus:4x4x4", "", Dirbit},
		{"torus:20x20", "", AngaraStar},
	}
	corrupted, violations := 0, 0
	for _, tc := range cases {
		g, err := topology.Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if tc.fail != "" {
			if g, err = g.ApplyFaults(tc.fail, ""); err != nil {
				t.Fatal(err)
			}
		}
		rt, err := NewRouter(g, Rule{Kind: tc.kind})
		if err != nil {
			t.Fatal(err)
		}
		for trial := 0; trial < 4; trial++ {
			var active, transit []int
			for v := 0; v < g.NumNodes(); v++ {
				switch x := r.IntN(10); {
				case trial == 0 || x < 7:
					active = append(active, v)
				case x < 9:
					transit = append(transit, v)
				}
			}
			tb, err := rt.Build(context.Background(), active, transit, BuildOptions{Unverified: true})
			if err != nil {
				continue // not reachable
			}
			for round := 0; round < 3; round++ {
				switch round {
				case 1:
					corrupt(r, tb, 1+r.IntN(20))
					corrupted++
				case 2: // more violations than a report keeps
					corrupt(r, tb, 300+r.IntN(300))
					corrupted++
				}
				rt.tune.noSharedWalk = true
				want, err := rt.Verify(context.Background(), tb, VerifyOptions{})
				if err != nil {
					t.Fatal(err)
				}
				rt.tune.noSharedWalk = false
				got, err := rt.Verify(context.Background(), tb, VerifyOptions{Workers: 1 + r.IntN(3)})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s %v round %d: shared walk reports\n%+v\nroute by route\n%+v", tc.spec, tc.kind, round, got, want)
				}
				violations += len(want.Violations)
			}
		}
	}
	if corrupted < 20 || violations < 1000 {
		t.Fatalf("%d tables corrupted, %d violations: the comparison covers too little", corrupted, violations)
	}
}

// corrupt changes n random route codes of tb.
func corrupt(r *rand.Rand, tb *Table, n int) {
	nd := tb.r.t.nd
	for ; n > 0; n-- {
		i := r.IntN(tb.NumRoutes())
		c := tb.code(i)
		switch r.IntN(5) {
		case 0: // one more or one fewer step along a direction
			k := 2 + r.IntN(nd)
			if c[k] > 0 && r.IntN(2) == 0 {
				c[k]--
			} else {
				c[k]++
			}
		case 1: // another FS or LS step, or none
			c[r.IntN(2)] = byte(r.IntN(nd + 1))
		case 2: // not a direction
			c[r.IntN(2)] = byte(nd + 1 + r.IntN(3))
		case 3: // another route's code
			copy(c, tb.code(r.IntN(tb.NumRoutes())))
		default: // many steps: around a ring
			c[2+r.IntN(nd)] += byte(slices.Max(tb.r.t.dims))
		}
	}
}
