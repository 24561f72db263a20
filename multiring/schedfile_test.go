package multiring

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestParseStepsSpellings: every spelling of {±1,±3} the parser accepts
// gives the same rings on 16 nodes, in the multiring's order 1, 3, -3, -1;
// the parse itself keeps the order written.
func TestParseStepsSpellings(t *testing.T) {
	duplex := []int{1, -1, 3, -3}
	simplex := []int{1, 3, -3, -1}
	for _, c := range []struct {
		in   string
		want []int
	}{
		{"±1,±3", duplex},
		{"+-1,+-3", duplex},
		{"+/-1,+/-3", duplex},
		{"-+1;-+3", duplex},
		{"±1;±3", duplex},
		{"±1 ±3", duplex},
		{"{±1,±3}", duplex},
		{" { ±1 , ±3 } ", duplex},
		{"±1,,±3", duplex},
		{"1,-1,3,-3", duplex},
		{"1\t-1\t3\t-3", duplex},
		{"1 3 -3 -1", simplex},
		{"1,3,13,15", []int{1, 3, 13, 15}},
		{"+1,+3,-3,-1", simplex},
	} {
		st, err := ParseSteps(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if !slices.Equal(st, c.want) {
			t.Errorf("%q parses to %v, want %v", c.in, st, c.want)
		}
		m, err := New(16, st)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got := m.Signed(); !slices.Equal(got, simplex) {
			t.Errorf("%q: rings %v on 16 nodes, want %v", c.in, got, simplex)
		}
		if got := FormatSteps(16, m.Steps); got != "{±1,±3}" {
			t.Errorf("%q: written %s, want {±1,±3}", c.in, got)
		}
	}
}

// TestParseStepsErrors: bad steps are refused with one line that says
// what is wrong.
func TestParseStepsErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "no ring steps"},
		{" , ; ", "no ring steps"},
		{"{}", "no ring steps"},
		{"±", "not a whole number"},
		{"1,x", `"x" is not a whole number`},
		{"±-1", "not a whole number"},
		{"+-+1", "not a whole number"},
		{"1.5", "not a whole number"},
		{"2×±1", "not a whole number"},
		{"{±1,±3", "unbalanced brace"},
		{"99999999999999999999", "not a whole number in -65536..65536"},
		{"65537", "not a whole number in -65536..65536"},
		{"1\n3", "not a whole number"},
		{strings.Repeat("1,", 4097), "too many ring steps"},
	} {
		_, err := ParseSteps(c.in)
		if err == nil {
			t.Errorf("%.20q: accepted", c.in)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%.20q: error %q, want one line containing %q", c.in, err, c.want)
		}
	}
}

// TestScheduleRoundTrip: a schedule printed as JSON (the report of `icn
// multiring capacity --json`) reads back as the same schedule, bit for
// bit, copies included; so does the plain form with its rings listed in
// another order.
func TestScheduleRoundTrip(t *testing.T) {
	for _, c := range []struct {
		n      int
		steps  string
		copies int
	}{
		{16, "±1,±3", 1},
		{32, "±1", 4},
		{32, "±1,±2,±3,±7", 1},
		{12, "1,5,-2", 1},
		{9, "±1,3", 2},
	} {
		st, err := ParseSteps(c.steps)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewCopies(c.n, st, c.copies)
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []string{Shortest, Balanced, Optimal} {
			s, err := m.Schedule(kind)
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("N=%d %s ×%d %s", c.n, c.steps, c.copies, kind)
			data, err := json.Marshal(s.Report())
			if err != nil {
				t.Fatal(err)
			}
			back, err := ParseSchedule(data)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			sameSchedule(t, name+" report", back, s)
			data, err = json.Marshal(plainReversed(s))
			if err != nil {
				t.Fatal(err)
			}
			back, err = ParseSchedule(data)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			sameSchedule(t, name+" plain, rings reversed", back, s)
		}
	}
}

// plainReversed writes s in the plain form with its rings in reverse
// order (copies of a ring, which are told apart by their order, kept in
// theirs).
func plainReversed(s *Schedule) any {
	n, k, c := s.M.N, len(s.M.Steps), s.M.Copies
	f := struct {
		N        int         `json:"n"`
		Steps    []int       `json:"steps"`
		Schedule string      `json:"schedule"`
		Shares   [][]float64 `json:"shares"`
	}{N: n, Schedule: s.Name}
	for g := k/c - 1; g >= 0; g-- {
		for j := g * c; j < (g+1)*c; j++ {
			f.Steps = append(f.Steps, s.M.Signed()[j])
			f.Shares = append(f.Shares, s.P[j*n+1:(j+1)*n])
		}
	}
	return f
}

func sameSchedule(t *testing.T, name string, got, want *Schedule) {
	t.Helper()
	if got.M.N != want.M.N || !slices.Equal(got.M.Steps, want.M.Steps) || got.M.Copies != want.M.Copies || got.Name != want.Name {
		t.Errorf("%s: read N=%d rings %v ×%d %q, want N=%d %v ×%d %q", name, got.M.N, got.M.Steps, got.M.Copies, got.Name,
			want.M.N, want.M.Steps, want.M.Copies, want.Name)
		return
	}
	if !slices.Equal(got.P, want.P) {
		t.Errorf("%s: shares differ after the round trip", name)
	}
}

// TestParseScheduleErrors: bad schedule files are refused with one line.
func TestParseScheduleErrors(t *testing.T) {
	ok := []string{
		`{"n":4,"steps":[1,-1],"shares":[[1,0.5,0],[0,0.5,1]]}`,
		`{"n":4,"steps":[1,-1],"table":[{"shares":[1,0.5,0]},{"shares":[0,0.5,1]}]}`,
		`{"n":4,"steps":[-1,1],"shares":[[0,0.5,1],[1,0.5,0]]}`,
		`{"n":3,"steps":[1,1],"shares":[[0.5,0.5],[0.5,0.5]]}`,
		`{"n":4,"steps":[1,5],"shares":[[1,0.5,0],[0,0.5,1]]}`,              // 5 ≡ 1: two copies of ring 1
		`{"n":4,"steps":[1,-1],"shares":[[1,0.3333333,0],[0,0.6666666,1]]}`, // rounded: sum within 1e-6
	}
	for _, in := range ok {
		if _, err := ParseSchedule([]byte(in)); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
	for _, c := range []struct{ in, want string }{
		{`{"n":4,"steps":[1,-1],"shares":[[1,0.6,0],[0,0.5,1]]}`, "sum to 1.1"},
		{`{"n":4,"steps":[2,-1],"shares":[[1,0,0],[0,1,1]]}`, "cannot carry"},
		{`{"n":4,"steps":[1,-1],"shares":[[1,0.5],[0,0.5,1]]}`, "ring 1 lists 2 shares, want 3"},
		{`{"n":1,"steps":[1],"shares":[[]]}`, "n=1 out of range"},
		{`{"n":4,"steps":[1,-1],"table":[{"shares":[1,0.5,0]}]}`, "1 share rows for 2 rings"},
		{`{"n":4,"steps":[4,-1],"shares":[[1,0.5,0],[0,0.5,1]]}`, "multiple of N"},
		{`{"n":4,"steps":[1,-1],"shares":[[1,-0.5,0],[0,1.5,1]]}`, "outside [0,1]"},
		{`{"n":4,"steps":[1,1,-1],"shares":[[1,0.5,0],[0,0,0],[0,0.5,1]]}`, "same number of copies"},
		{`{"n":4,"steps":[1,-1,-1],"shares":[[1,0.5,0],[0,0.5,1],[0,0,0]]}`, "listed 1 times and -1 2 times"},
		{`{"n":6,"steps":[2,-2],"shares":[[1,1,1,1,1],[0,0,0,0,0]]}`, "coprime"},
		{`{"n":4,"steps":[],"shares":[]}`, "want 1..4096 ring steps"},
		{`{"n":65536,"steps":[1],"shares":[[1]]}`, "lists 1 shares, want 65535"},
		{`{"n":4,"steps":[1,-1],"shares":[[1,0.5,0],[0,0.5,1]]`, "unexpected end"},
		{"{\"n\":\"4\"\n}", "cannot unmarshal"},
	} {
		_, err := ParseSchedule([]byte(c.in))
		if err == nil {
			t.Errorf("%s: accepted", c.in)
			continue
		}
		if e := err.Error(); !strings.HasPrefix(e, "ring schedule: ") || !strings.Contains(e, c.want) || strings.Contains(e, "\n") {
			t.Errorf("%s: error %q, want one line 'ring schedule: …%s…'", c.in, e, c.want)
		}
	}
}

// FuzzParseSchedule: the reader never panics and its errors are one line;
// an accepted schedule is a distribution over the rings that can carry
// each route, has a positive finite capacity and reads back from its own
// report unchanged.
func FuzzParseSchedule(f *testing.F) {
	f.Add([]byte(`{"n":4,"steps":[1,-1],"shares":[[1,0.5,0],[0,0.5,1]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSchedule(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %v", err)
			}
			return
		}
		if err := s.check(0, 1e-6); err != nil {
			t.Fatalf("accepted schedule fails its check: %v", err)
		}
		if c := s.Effective(); !(c > 0) || math.IsInf(c, 0) {
			t.Fatalf("capacity %g", c)
		}
		out, err := json.Marshal(s.Report())
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseSchedule(out)
		if err != nil {
			t.Fatalf("own report refused: %v", err)
		}
		sameSchedule(t, "report", back, s)
	})
}
