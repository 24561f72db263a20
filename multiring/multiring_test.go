package multiring

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Seed 000, table 2.2: shortest schedule for N=16 {±1,±3}, rows 1, 3, -3, -1.
var seedTable22 = [4][15]float64{
	{1, 1, 0, 0.5, 1, 0, 0, 0.25, 0, 0, 0, 0, 0, 0, 0},
	{0, 0, 1, 0, 0, 1, 0, 0.25, 1, 0, 0, 0.5, 0, 0, 0},
	{0, 0, 0, 0.5, 0, 0, 1, 0.25, 0, 1, 0, 0, 1, 0, 0},
	{0, 0, 0, 0, 0, 0, 0, 0.25, 0, 0, 1, 0.5, 0, 1, 1},
}

// Seed 000, table 2.3: balanced schedule.
var seedTable23 = [4][15]float64{
	{1, 1, 0, 0.5, 1, 0, 0, 0.125, 0, 0, 0, 0, 0, 0, 0},
	{0, 0, 1, 0, 0, 1, 0, 0.375, 1, 0, 0, 0.5, 0, 0, 0},
	{0, 0, 0, 0.5, 0, 0, 1, 0.375, 0, 1, 0, 0, 1, 0, 0},
	{0, 0, 0, 0, 0, 0, 0, 0.125, 0, 0, 1, 0.5, 0, 1, 1},
}

func seedMultiring(t testing.TB) *Multiring {
	t.Helper()
	m, err := Parse(16, "±1,±3")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSeedRingOrderAndRouteTable(t *testing.T) {
	m := seedMultiring(t)
	if got := strings.Join([]string{m.Label(0), m.Label(1), m.Label(2), m.Label(3)}, " "); got != "1 3 -3 -1" {
		t.Fatalf("ring order %q, seed has 1 3 -3 -1", got)
	}
	// Table 2.1, ring 3 and ring -3 rows.
	want3 := []int{0, 3, 6, 9, 12, 15, 2, 5, 8, 11, 14, 1, 4, 7, 10, 13}
	wantm3 := []int{0, 13, 10, 7, 4, 1, 14, 11, 8, 5, 2, 15, 12, 9, 6, 3}
	for h := range 16 {
		if m.Visit(1, h) != want3[h] || m.Visit(2, h) != wantm3[h] {
			t.Fatalf("hop %d: ring 3 visits %d (seed %d), ring -3 visits %d (seed %d)", h, m.Visit(1, h), want3[h], m.Visit(2, h), wantm3[h])
		}
	}
}

func checkTable(t *testing.T, s *Schedule, want [4][15]float64) {
	t.Helper()
	for j := range 4 {
		for r := 1; r < 16; r++ {
			if got := s.Share(j, r); math.Abs(got-want[j][r-1]) > 1e-12 {
				t.Errorf("%s p[%s][%d] = %g, seed %g", s.Name, s.M.Label(j), r, got, want[j][r-1])
			}
		}
	}
}

func TestSeedTable22Shortest(t *testing.T) {
	m := seedMultiring(t)
	s := m.Shortest()
	checkTable(t, s, seedTable22)
	if got := s.Loads(); !slices.Equal(got, []float64{12, 10, 10, 12}) {
		t.Errorf("weighted lengths %v, seed 12 10 10 12 (1+2+2+5+2, 1+2+3+2+2)", got)
	}
	if c := s.Effective(); c != 20 {
		t.Errorf("C = %g, seed 20", c)
	}
	// c_j = N/mean length: ring 1 carries 3.75 routes of total length 12.
	if c := s.RingCapacity(); math.Abs(c[0]-5) > 1e-12 || math.Abs(c[1]-6) > 1e-12 {
		t.Errorf("ring capacities %v, want 5 and 6", c)
	}
}

func TestSeedTable23Balanced(t *testing.T) {
	m := seedMultiring(t)
	s := m.Balanced()
	checkTable(t, s, seedTable23)
	c := s.Effective()
	if math.Round(c*10)/10 != 21.8 || math.Abs(c-240.0/11) > 1e-9 {
		t.Errorf("C = %g, seed 21.8 (= 240/11)", c)
	}
	o, err := m.Optimal()
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(o.Effective()-c) > 1e-6 || math.Abs(m.UpperBound()-c) > 1e-9 {
		t.Errorf("optimal %g and bound %g should equal the balanced %g here", o.Effective(), m.UpperBound(), c)
	}
}

// Brute force: the length table is the hop count found by walking the ring.
func TestLengthsByWalking(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		n := 2 + rng.IntN(40)
		steps := randomSteps(rng, n)
		m, err := New(n, steps)
		if err != nil {
			continue
		}
		for j, s := range m.Steps {
			for r := 1; r < n; r++ {
				want := -1
				x := 0
				for h := 0; h < n; h++ {
					if x == r {
						want = h
						break
					}
					x = (x + s) % n
				}
				if got := m.Length(j, r); got != want {
					t.Fatalf("N=%d step %d route %d: length %d, walk %d", n, s, r, got, want)
				}
			}
		}
	}
}

func randomSteps(rng *rand.Rand, n int) []int {
	var steps []int
	for range 1 + rng.IntN(min(n-1, 6)) {
		steps = append(steps, 1+rng.IntN(n-1))
	}
	slices.Sort(steps)
	steps = slices.Compact(steps)
	if rng.IntN(2) == 0 {
		steps = append(steps, 1)
		slices.Sort(steps)
		steps = slices.Compact(steps)
	}
	return steps
}

// Properties of the three schedules on random multirings: valid
// distributions, shortest ≤ balanced ≤ optimal ≤ bound, and the shortest
// schedule has the least total length.
func TestScheduleOrdering(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	tested := 0
	for tested < 60 {
		n := 3 + rng.IntN(30)
		m, err := New(n, randomSteps(rng, n))
		if err != nil {
			continue
		}
		tested++
		sh, bal := m.Shortest(), m.Balanced()
		opt, err := m.Optimal()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []*Schedule{sh, bal, opt} {
			if err := s.Check(); err != nil {
				t.Fatalf("N=%d %v %s: %v", n, m.Steps, s.Name, err)
			}
		}
		cs, cb, co, ub := sh.Effective(), bal.Effective(), opt.Effective(), m.UpperBound()
		if cs > cb+1e-9 || cb > co*(1+1e-7) || co > ub*(1+1e-7) {
			t.Fatalf("N=%d %v: shortest %g balanced %g optimal %g bound %g out of order", n, m.Steps, cs, cb, co, ub)
		}
		total := func(s *Schedule) float64 {
			sum := 0.0
			for _, l := range s.Loads() {
				sum += l
			}
			return sum
		}
		if total(sh) > total(bal)+1e-9 || total(sh) > total(opt)+1e-6 {
			t.Fatalf("N=%d %v: shortest total %g is not the least (balanced %g, optimal %g)", n, m.Steps, total(sh), total(bal), total(opt))
		}
	}
}

// Relabelling nodes by a unit u maps the multiring S onto u·S, so the
// schedules' capacities do not change.
func TestUnitMultiplicationInvariance(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for range 40 {
		n := 5 + rng.IntN(30)
		steps := randomSteps(rng, n)
		m, err := New(n, steps)
		if err != nil {
			continue
		}
		u := 1 + rng.IntN(n-1)
		for gcd(u, n) != 1 {
			u = 1 + rng.IntN(n-1)
		}
		img := make([]int, len(steps))
		for i, s := range steps {
			img[i] = s * u % n
		}
		m2, err := New(n, img)
		if err != nil {
			t.Fatal(err)
		}
		o1, _ := m.Optimal()
		o2, _ := m2.Optimal()
		if math.Abs(m.Shortest().Effective()-m2.Shortest().Effective()) > 1e-9 ||
			math.Abs(o1.Effective()-o2.Effective()) > 1e-6*o1.Effective() ||
			math.Abs(m.UpperBound()-m2.UpperBound()) > 1e-9 {
			t.Fatalf("N=%d %v vs %v (u=%d): capacities differ", n, steps, img, u)
		}
	}
}

// Seed §2: a simplex ring has capacity 2, a duplex ring tends to 8, two
// identical duplex rings on 16 nodes give 15 (Gemini z).
func TestSingleRings(t *testing.T) {
	m, _ := Parse(1000, "1")
	if c := m.Shortest().Effective(); math.Abs(c-2) > 1e-12 {
		t.Errorf("simplex ring C = %g, want 2", c)
	}
	m, _ = Parse(1001, "±1")
	if c := m.Shortest().Effective(); c < 7.99 || c > 8 {
		t.Errorf("duplex ring on 1001 nodes C = %g, want → 8", c)
	}
	if c := DuplexRingCapacity(1001); math.Abs(c-m.Shortest().Effective()) > 1e-9 {
		t.Errorf("DuplexRingCapacity %g differs from the multiring %g", c, m.Shortest().Effective())
	}
	st, _ := ParseSteps("±1")
	m, err := NewCopies(16, st, 2)
	if err != nil {
		t.Fatal(err)
	}
	if c := m.Balanced().Effective(); c != 15 {
		t.Errorf("two ±1 rings on 16 nodes: C = %g, want 15", c)
	}
}

func TestBadInput(t *testing.T) {
	for _, c := range []struct {
		n     int
		steps string
		want  string
	}{
		{16, "0", "multiple of N"},
		{16, "±16", "multiple of N"},
		{16, "1,17", "same ring"},
		{16, "±1,±1", "same ring"},
		{16, "±8", "same ring"},
		{16, "±2,±4", "disconnected"},
		{6, "±2,3", "coprime"},
		{1, "1", "out of range"},
		{16, "", "no ring steps"},
		{16, "1,x", "not a whole number"},
		{16, "±-1", "not a whole number"},
	} {
		_, err := Parse(c.n, c.steps)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("N=%d steps %q: error %v, want %q", c.n, c.steps, err, c.want)
		}
	}
}

func TestFormatParseRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 300 {
		n := 2 + rng.IntN(60)
		m, err := New(n, randomSteps(rng, n))
		if err != nil {
			continue
		}
		s := FormatSteps(n, m.Steps)
		m2, err := Parse(n, s)
		if err != nil {
			t.Fatalf("N=%d: %q does not parse back: %v", n, s, err)
		}
		if !slices.Equal(m.Steps, m2.Steps) {
			t.Fatalf("N=%d: %v → %q → %v", n, m.Steps, s, m2.Steps)
		}
	}
}

// FuzzParseSteps: the parser never panics and its errors are one line;
// an accepted multiring has a valid shortest schedule, and its steps
// written by FormatSteps parse back to the same rings.
func FuzzParseSteps(f *testing.F) {
	for _, s := range []string{"±1,±3", "+-1,+-3", "1,3,-3,-1", "1 3", "±", "+/-7", "-+2", "99999999999999999999", "1,,2", "{±1;±3}", "{1"} {
		f.Add(16, s)
	}
	f.Fuzz(func(t *testing.T, n int, s string) {
		st, err := ParseSteps(s)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: error of more than one line: %v", s, err)
			}
			return
		}
		if n < -1000 || n > 1000 {
			return
		}
		m, err := New(n, st)
		if err != nil {
			return
		}
		if err := m.Shortest().Check(); err != nil {
			t.Fatal(err)
		}
		w := FormatSteps(n, m.Steps)
		back, err := Parse(n, w)
		if err != nil {
			t.Fatalf("N=%d %q: %s does not parse back: %v", n, s, w, err)
		}
		if !slices.Equal(back.Steps, m.Steps) {
			t.Fatalf("N=%d %q: rings %v written %s read back as %v", n, s, m.Steps, w, back.Steps)
		}
	})
}

func TestCable(t *testing.T) {
	if c := Cable([]int{1, 2, 3, 7}); c != 13 || float64(c)/4 != 3.25 {
		t.Errorf("cable of {±1,±2,±3,±7} = %d, seed: 3.25 × four ±1 rings", c)
	}
	for n := 2; n <= 40; n += 2 {
		if e := CableSeed(n); e != n*n/2-2*n+6 {
			t.Errorf("E(%d) = %d, closed form %d", n, e, n*n/2-2*n+6)
		}
	}
}

// A full multiring written as a RingNet has the same shortest-schedule
// capacity (arc loads are equal along each ring by symmetry).
func TestRingNetMatchesMultiring(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	tested := 0
	for tested < 40 {
		n := 3 + rng.IntN(25)
		var duplex []int
		for range 1 + rng.IntN(3) {
			duplex = append(duplex, 1+rng.IntN(n/2))
		}
		slices.Sort(duplex)
		duplex = slices.Compact(duplex)
		var steps []int
		rn := RingNet{Subscribers: n}
		for _, s := range duplex {
			steps = append(steps, s, -s)
			g := gcd(n, s)
			for start := 0; start < g; start++ {
				var ring []int
				for x, h := start, 0; h < n/g; h, x = h+1, (x+s)%n {
					ring = append(ring, x)
				}
				rn.Rings = append(rn.Rings, ring)
			}
		}
		m, err := New(n, steps)
		if err != nil {
			continue
		}
		tested++
		nc, err := rn.Capacity()
		if err != nil {
			t.Fatal(err)
		}
		if want := m.Shortest().Effective(); math.Abs(nc.Effective-want) > 1e-9*want {
			t.Fatalf("N=%d %v: RingNet C=%g, multiring C=%g", n, duplex, nc.Effective, want)
		}
	}
}
