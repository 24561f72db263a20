package multiring

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// Schedule is a route schedule R(r) = p_jr (seed (2.2)–(2.5)): the share of
// routes of ring-1 length r (destination r from source 0; by node symmetry
// every source behaves the same) sent on ring j. For every r the shares sum
// to 1 and are 0 on rings that cannot carry r.
type Schedule struct {
	M    *Multiring
	Name string    // "shortest", "balanced" or "optimal"
	P    []float64 // P[j*N+r]; P[j*N+0] is unused and 0
}

// Schedule kinds accepted by (*Multiring).Schedule.
const (
	Shortest = "shortest"
	Balanced = "balanced"
	Optimal  = "optimal"
)

// ScheduleKinds lists the kinds (*Multiring).Schedule computes.
var ScheduleKinds = []string{Shortest, Balanced, Optimal}

// Schedule builds the named schedule.
func (m *Multiring) Schedule(kind string) (*Schedule, error) {
	switch kind {
	case Shortest:
		return m.Shortest(), nil
	case Balanced:
		return m.Balanced(), nil
	case Optimal:
		return m.Optimal()
	}
	return nil, fmt.Errorf("unknown schedule %q (want %s)", kind, strings.Join(ScheduleKinds, ", "))
}

// Share returns p_jr.
func (s *Schedule) Share(j, r int) float64 { return s.P[j*s.M.N+r] }

// Shortest is the seed's simplest rule: route r goes to the rings on which
// it is shortest, split equally among them (table 2.2).
func (m *Multiring) Shortest() *Schedule {
	n, k := m.N, len(m.Steps)
	p := make([]float64, k*n)
	for r := 1; r < n; r++ {
		best, cnt := int32(math.MaxInt32), 0
		for j := 0; j < k; j++ {
			l := m.length[j*n+r]
			if l < 0 {
				continue
			}
			if l < best {
				best, cnt = l, 1
			} else if l == best {
				cnt++
			}
		}
		for j := 0; j < k; j++ {
			if m.length[j*n+r] == best {
				p[j*n+r] = 1 / float64(cnt)
			}
		}
	}
	return &Schedule{M: m, Name: Shortest, P: p}
}

// Balanced starts from the shortest schedule and repeatedly relieves the
// most loaded ring (the seed's load-equalising heuristic, table 2.3): let a
// be the ring with the largest weighted length L_a; among the rings b with
// L_b < L_a and the routes r that a carries and b can carry, take the pair
// with the best length ratio l_a(r)/l_b(r) (ties: least loaded b, then
// lower ring index, then smaller r) and move share δ = min(p_ar,
// (L_a-L_b)/(l_a(r)+l_b(r))) of r from a to b, which equalises the two
// rings unless the share runs out. Stop when the most loaded ring can hand
// nothing to a less loaded one. For N=16 {±1,±3} this gives exactly the
// seed's table 2.3.
func (m *Multiring) Balanced() *Schedule {
	s := m.Shortest()
	s.Name = Balanced
	m.balance(s.P, s.Loads())
	return s
}

func (m *Multiring) balance(p, load []float64) {
	n, k := m.N, len(m.Steps)
	// supp[j]: the routes with p_jr > 0, kept in increasing r.
	supp := make([][]int32, k)
	for j := 0; j < k; j++ {
		for r := 1; r < n; r++ {
			if p[j*n+r] > 0 {
				supp[j] = append(supp[j], int32(r))
			}
		}
	}
	maxIter := 64*k*n + 1000
	for it := 0; it < maxIter; it++ {
		a := 0
		for j := 1; j < k; j++ {
			if load[j] > load[a] {
				a = j
			}
		}
		tol := 1e-9 * math.Max(1, load[a])
		la, pa := m.length[a*n:(a+1)*n], p[a*n:(a+1)*n]
		bb, br := -1, int32(-1)
		var lbest int32
		for b := 0; b < k; b++ {
			if b == a || load[b] >= load[a]-tol {
				continue
			}
			lb := m.length[b*n : (b+1)*n]
			for _, r := range supp[a] {
				if lb[r] < 0 {
					continue
				}
				if bb >= 0 {
					// better ratio la/lb: la[r]*lbest > la[br]*lb[r]
					x, y := int64(la[r])*int64(lbest), int64(la[br])*int64(lb[r])
					if x < y || (x == y && (b == bb || load[b] >= load[bb])) {
						continue
					}
				}
				bb, br, lbest = b, r, lb[r]
			}
		}
		if bb < 0 {
			return
		}
		da, db := float64(la[br]), float64(lbest)
		d := (load[a] - load[bb]) / (da + db)
		if d >= pa[br] {
			d = pa[br]
			pa[br] = 0
			supp[a] = remove(supp[a], br)
		} else {
			pa[br] -= d
		}
		if p[bb*n+int(br)] == 0 {
			supp[bb] = insert(supp[bb], br)
		}
		p[bb*n+int(br)] += d
		load[a] -= d * da
		load[bb] += d * db
	}
}

func remove(s []int32, x int32) []int32 {
	i, ok := slices.BinarySearch(s, x)
	if ok {
		s = slices.Delete(s, i, i+1)
	}
	return s
}

func insert(s []int32, x int32) []int32 {
	i, ok := slices.BinarySearch(s, x)
	if !ok {
		s = slices.Insert(s, i, x)
	}
	return s
}

// Optimal solves the linear program min_p max_j L_j exactly (dense simplex
// from gonum); it bounds what any schedule, and so the balancing heuristic,
// can reach. Practical up to a few thousand (ring, route) pairs.
func (m *Multiring) Optimal() (*Schedule, error) {
	n, k := m.N, len(m.Steps)
	type vr struct{ j, r int }
	var vars []vr
	for j := 0; j < k; j++ {
		for r := 1; r < n; r++ {
			if m.length[j*n+r] >= 0 {
				vars = append(vars, vr{j, r})
			}
		}
	}
	if len(vars) > 6000 {
		return nil, fmt.Errorf("optimal schedule: %d ring/route pairs is too large for the dense LP (limit 6000); use the balanced schedule", len(vars))
	}
	// Variables: p (len(vars)), t, slack_j (k). Rows: n-1 route rows, k ring rows.
	nv := len(vars) + 1 + k
	rows := (n - 1) + k
	A := mat.NewDense(rows, nv, nil)
	b := make([]float64, rows)
	c := make([]float64, nv)
	tIdx := len(vars)
	c[tIdx] = 1
	for i, v := range vars {
		A.Set(v.r-1, i, 1)
		A.Set(n-1+v.j, i, float64(m.length[v.j*n+v.r]))
	}
	for r := 1; r < n; r++ {
		b[r-1] = 1
	}
	for j := 0; j < k; j++ {
		A.Set(n-1+j, tIdx, -1)
		A.Set(n-1+j, tIdx+1+j, 1)
	}
	_, x, err := lp.Simplex(c, A, b, 1e-10, nil)
	if err != nil && !errors.Is(err, lp.ErrBland) {
		return nil, fmt.Errorf("optimal schedule: %v", err)
	}
	if x == nil {
		return nil, fmt.Errorf("optimal schedule: %v", err)
	}
	p := make([]float64, k*n)
	for i, v := range vars {
		if x[i] > 1e-12 {
			p[v.j*n+v.r] = x[i]
		}
	}
	// normalise tiny numerical drift per route
	for r := 1; r < n; r++ {
		sum := 0.0
		for j := 0; j < k; j++ {
			sum += p[j*n+r]
		}
		if sum <= 0 {
			return nil, fmt.Errorf("optimal schedule: LP left route %d unassigned", r)
		}
		for j := 0; j < k; j++ {
			p[j*n+r] /= sum
		}
	}
	return &Schedule{M: m, Name: Optimal, P: p}, nil
}

// Loads returns the weighted length L_j = Σ_r l_j(r)·p_jr of every ring
// (the seed's "взвешенные длины" summed per ring).
func (s *Schedule) Loads() []float64 {
	m := s.M
	n, k := m.N, len(m.Steps)
	out := make([]float64, k)
	for j := 0; j < k; j++ {
		sum := 0.0
		for r := 1; r < n; r++ {
			if p := s.P[j*n+r]; p != 0 {
				sum += p * float64(m.length[j*n+r])
			}
		}
		out[j] = sum
	}
	return out
}

// Routes returns M_j = Σ_r p_jr, the number of routes given to ring j.
func (s *Schedule) Routes() []float64 {
	m := s.M
	n, k := m.N, len(m.Steps)
	out := make([]float64, k)
	for j := 0; j < k; j++ {
		for r := 1; r < n; r++ {
			out[j] += s.P[j*n+r]
		}
	}
	return out
}

// RingCapacity returns c_j = N / (mean path length on ring j) = N·M_j/L_j
// (seed (2.2)); 0 for a ring that carries no routes.
func (s *Schedule) RingCapacity() []float64 {
	load, routes := s.Loads(), s.Routes()
	out := make([]float64, len(load))
	for j := range out {
		if load[j] > 0 {
			out[j] = float64(s.M.N) * routes[j] / load[j]
		}
	}
	return out
}

// MaxLoad returns L = max_j L_j.
func (s *Schedule) MaxLoad() float64 {
	l := 0.0
	for _, x := range s.Loads() {
		l = math.Max(l, x)
	}
	return l
}

// Effective returns the effective capacity C = N(N-1)/L (seed (2.5)).
func (s *Schedule) Effective() float64 {
	return float64(s.M.N) * float64(s.M.N-1) / s.MaxLoad()
}

// SumCapacity is Σ_j c_j, the naive capacity the seed says simulation does
// not confirm when rings are loaded unevenly.
func (s *Schedule) SumCapacity() float64 {
	sum := 0.0
	for _, c := range s.RingCapacity() {
		sum += c
	}
	return sum
}

// Check verifies that the schedule is a distribution for every route and
// uses only rings that can carry it.
func (s *Schedule) Check() error { return s.check(1e-12, 1e-9) }

// check is Check with every share in [-eps, 1+eps], at most eps on rings
// that cannot carry its route, and the shares of every route summing to 1
// within tol. Computed schedules get a little slack for rounding; a
// schedule read from a file none on its shares (eps 0) but more on their
// sums, whose terms were printed rounded.
func (s *Schedule) check(eps, tol float64) error {
	m := s.M
	n, k := m.N, len(m.Steps)
	if len(s.P) != k*n {
		return fmt.Errorf("%d shares for %d rings × %d route lengths", len(s.P), k, n)
	}
	for r := 1; r < n; r++ {
		sum := 0.0
		for j := 0; j < k; j++ {
			p := s.P[j*n+r]
			if !(p >= -eps && p <= 1+eps) { // NaN too
				return fmt.Errorf("share p[%s][%d]=%g outside [0,1]", m.Label(j), r, p)
			}
			if p > eps && m.length[j*n+r] < 0 {
				return fmt.Errorf("route %d assigned to ring %s which cannot carry it", r, m.Label(j))
			}
			sum += p
		}
		if math.Abs(sum-1) > tol {
			return fmt.Errorf("shares of route %d sum to %g, not 1", r, sum)
		}
	}
	return nil
}

// UpperBound bounds the effective capacity of every schedule:
// C ≤ n·N(N-1)/Σ_r min_j l_j(r), because the total load is at least the sum
// of shortest lengths and the largest ring load at least its average. It is
// reached exactly when the shortest lengths can be spread evenly.
func (m *Multiring) UpperBound() float64 {
	n, k := m.N, len(m.Steps)
	total := 0
	for r := 1; r < n; r++ {
		best := int32(math.MaxInt32)
		for j := 0; j < k; j++ {
			if l := m.length[j*n+r]; l >= 0 && l < best {
				best = l
			}
		}
		total += int(best)
	}
	return float64(k) * float64(n) * float64(n-1) / float64(total)
}
