package multiring

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxN bounds the number of nodes of a multiring (route tables are N×n).
const MaxN = 1 << 16

// maxRings bounds the number of simplex rings, copies included.
const maxRings = 4096

// Multiring is a set of rings on N nodes: ring j visits
// X_{i+1} = (X_i + Steps[j]) mod N. Steps are normalised to 1..N-1 and sorted
// ascending, which is the seed's ring order (for N=16 {±1,±3}: 1, 3, 13=-3,
// 15=-1). A ring whose step shares a factor g with N splits into g mini-rings
// of N/g nodes; routes it cannot carry have no length on it.
type Multiring struct {
	N     int
	Steps []int
	// Copies > 1 means every ring is present Copies times (identical
	// parallel rings, e.g. Gemini's four ±1 rings); Steps then repeats each
	// step Copies times in a row.
	Copies int

	length []int32 // length[j*N+r]: hops from 0 to r on ring j, -1 if unreachable
}

// New builds a multiring, rejecting steps that are 0 or multiples of N,
// duplicate rings and step sets without a step coprime to N (a packet rides
// a single ring, so route 1 needs a ring through all nodes).
func New(n int, steps []int) (*Multiring, error) { return NewCopies(n, steps, 1) }

// NewCopies builds a multiring in which every ring is repeated copies times.
func NewCopies(n int, steps []int, copies int) (*Multiring, error) {
	if n < 2 || n > MaxN {
		return nil, fmt.Errorf("node count N=%d out of range 2..%d", n, MaxN)
	}
	if copies < 1 || copies > 64 {
		return nil, fmt.Errorf("copies=%d out of range 1..64", copies)
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("no ring steps")
	}
	if len(steps)*copies > maxRings {
		return nil, fmt.Errorf("%d rings: at most %d are supported", len(steps)*copies, maxRings)
	}
	norm := make([]int, 0, len(steps))
	seen := map[int]int{}
	unit := false
	for _, s := range steps {
		v := mod(s, n)
		if v == 0 {
			return nil, fmt.Errorf("ring step %d is 0 or a multiple of N=%d", s, n)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("ring steps %d and %d give the same ring on N=%d", prev, s, n)
		}
		seen[v] = s
		norm = append(norm, v)
		unit = unit || gcd(n, v) == 1
	}
	if !unit {
		return nil, fmt.Errorf("no step of %s is coprime to N=%d, so no single ring carries route 1: the multiring is disconnected for non-switched routing", FormatSteps(n, norm), n)
	}
	slices.Sort(norm)
	all := make([]int, 0, len(norm)*copies)
	for _, v := range norm {
		for range copies {
			all = append(all, v)
		}
	}
	m := &Multiring{N: n, Steps: all, Copies: copies}
	m.length = make([]int32, len(all)*n)
	for j, s := range all {
		fillLengths(m.length[j*n:(j+1)*n], n, s)
	}
	return m, nil
}

// fillLengths writes the hop count from 0 to every r on the ring of step s.
func fillLengths(dst []int32, n, s int) {
	for i := range dst {
		dst[i] = -1
	}
	x := 0
	ml := n / gcd(n, s)
	for h := 0; h < ml; h++ {
		dst[x] = int32(h)
		x += s
		if x >= n {
			x -= n
		}
	}
}

// Rings returns the number of rings (simplex rings, counting copies).
func (m *Multiring) Rings() int { return len(m.Steps) }

// Length returns the number of hops of route r (destination r, source 0) on
// ring j, or -1 if ring j cannot carry it.
func (m *Multiring) Length(j, r int) int { return int(m.length[j*m.N+r]) }

// Visit returns the node visited after h hops from node 0 on ring j (the
// rows of the seed's table 2.1).
func (m *Multiring) Visit(j, h int) int { return (h * m.Steps[j]) % m.N }

// Label is the seed's name of ring j: its step, negative above N/2.
func (m *Multiring) Label(j int) string { return StepLabel(m.N, m.Steps[j]) }

// Signed returns the steps as signed integers in (-N/2, N/2].
func (m *Multiring) Signed() []int {
	out := make([]int, len(m.Steps))
	for j, s := range m.Steps {
		out[j] = signed(m.N, s)
	}
	return out
}

func signed(n, s int) int {
	if s > n/2 {
		return s - n
	}
	return s
}

// StepLabel names step s on N nodes: "3" or "-3".
func StepLabel(n, s int) string { return strconv.Itoa(signed(n, ((s%n)+n)%n)) }

// FormatSteps writes steps compactly, pairing s and -s as "±s".
func FormatSteps(n int, steps []int) string {
	set := map[int]int{}
	for _, s := range steps {
		set[((s%n)+n)%n]++
	}
	var keys []int
	for s := range set {
		keys = append(keys, s)
	}
	slices.SortFunc(keys, func(a, b int) int {
		sa, sb := abs(signed(n, a)), abs(signed(n, b))
		if sa != sb {
			return sa - sb
		}
		return signed(n, b) - signed(n, a)
	})
	var parts []string
	done := map[int]bool{}
	for _, s := range keys {
		if done[s] {
			continue
		}
		done[s] = true
		neg := (n - s) % n
		lab := ""
		if neg != s && set[neg] > 0 && set[neg] == set[s] {
			done[neg] = true
			lab = "±" + strconv.Itoa(abs(signed(n, s)))
		} else {
			lab = StepLabel(n, s)
		}
		if set[s] > 1 {
			lab = strconv.Itoa(set[s]) + "×" + lab
		}
		parts = append(parts, lab)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// ParseSteps is icn's one reader of ring steps (`icn multiring`, `icn sim
// multiring`, design): "±1,±3", "+-1,+-3", "+/-1;-+3", "1,3,-3,-1",
// "1 3" or FormatSteps's "{±1,±3}". Steps are separated by commas,
// semicolons, spaces or tabs, optionally inside one pair of braces; "±s"
// (also "+-s", "+/-s", "-+s") is a duplex ring, i.e. the two rings s and
// -s, listed in that order; a plain or signed number is one simplex ring.
// The result keeps the order written and is not yet checked against N:
// New does that, and orders the rings ascending mod N (so "±1,±3" parses
// to [1 -1 3 -3] and becomes the rings [1 3 -3 -1] on 16 nodes). Errors
// are one line.
func ParseSteps(s string) ([]int, error) {
	var out []int
	body := strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(body, "{"); ok {
		if body, ok = strings.CutSuffix(rest, "}"); !ok {
			return nil, fmt.Errorf("ring steps %q: unbalanced brace", s)
		}
	}
	toks := strings.FieldsFunc(body, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == ';' })
	if len(toks) == 0 {
		return nil, fmt.Errorf("no ring steps in %q", s)
	}
	for _, tok := range toks {
		t := tok
		duplex := false
		for _, p := range []string{"±", "+-", "+/-", "-+"} {
			if rest, ok := strings.CutPrefix(t, p); ok {
				t, duplex = rest, true
				break
			}
		}
		if t == "" || (duplex && (t[0] == '+' || t[0] == '-')) {
			return nil, fmt.Errorf("ring step %q is not a whole number", tok)
		}
		v, err := strconv.Atoi(t)
		if err != nil || v > MaxN || v < -MaxN {
			return nil, fmt.Errorf("ring step %q is not a whole number in -%d..%d", tok, MaxN, MaxN)
		}
		if duplex {
			out = append(out, v, -v)
		} else {
			out = append(out, v)
		}
		if len(out) > maxRings {
			return nil, fmt.Errorf("too many ring steps")
		}
	}
	return out, nil
}

// Parse builds a multiring from N and a step string (see ParseSteps).
func Parse(n int, steps string) (*Multiring, error) {
	st, err := ParseSteps(steps)
	if err != nil {
		return nil, err
	}
	return New(n, st)
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	if a < 0 {
		return -a
	}
	return a
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
