package routing

import (
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Kind
		err  bool
	}{
		{"dor", DOR, false},
		{"DirBit", Dirbit, false},
		{"angara-", AngaraMinus, false},
		{"angara−", AngaraMinus, false},
		{"R_A-", AngaraMinus, false},
		{"angara", Angara, false},
		{"angara*", AngaraStar, false},
		{" R_A* ", AngaraStar, false},
		{"angara+", 0, true},
		{"", 0, true},
	} {
		r, err := ParseRule(tc.in)
		if (err != nil) != tc.err || (!tc.err && r.Kind != tc.want) {
			t.Errorf("ParseRule(%q) = %v, %v", tc.in, r, err)
		}
		if err == nil {
			if back, err := ParseRule(r.Kind.String()); err != nil || back.Kind != r.Kind {
				t.Errorf("round trip of %v: %v %v", r.Kind, back, err)
			}
		}
	}
}

func TestParseOrder(t *testing.T) {
	for _, tc := range []struct {
		in  string
		n   int
		err string
	}{
		{"+X,+Y,-X,-Y", 2, ""},
		{"-Y -X +Y +X", 2, ""},
		{"+X,+Y,+Z,-X,-Y,-Z", 3, ""},
		{"+X,+X,-X,-Y", 2, "twice"},
		{"+X,+Y,-X", 2, "lists 3"},
		{"+X,+Z,-X,-Y", 2, "not a direction"},
		{"+Q,+Y,-X,-Y", 2, "unknown dimension"},
		{"X,+Y,-X,-Y", 2, "sign"},
		{"+X,-X", 0, "dimensions"},
	} {
		o, err := ParseOrder(tc.in, tc.n)
		if tc.err == "" {
			if err != nil {
				t.Errorf("ParseOrder(%q): %v", tc.in, err)
				continue
			}
			if err := o.valid(tc.n); err != nil {
				t.Errorf("ParseOrder(%q) gave an invalid order: %v", tc.in, err)
			}
			back, err := ParseOrder(o.String(), tc.n)
			if err != nil || back.String() != o.String() {
				t.Errorf("round trip %q: %v %v", o, back, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseOrder(%q) error %v, want %q", tc.in, err, tc.err)
		}
	}
	if got := DefaultOrder(3).String(); got != "+X,+Y,+Z,-X,-Y,-Z" {
		t.Errorf("default order %s", got)
	}
}

// FuzzParseRule: any input parses or fails cleanly, and a parsed name
// round-trips.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"dor", "angara*", "R_A−", "angara-star", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		back, err := ParseRule(r.String())
		if err != nil || back.Kind != r.Kind {
			t.Fatalf("%q → %v → %v %v", s, r, back, err)
		}
	})
}

// FuzzParseOrder: a parsed order is a permutation of the 2n directions
// and round-trips.
func FuzzParseOrder(f *testing.F) {
	f.Add("+X,+Y,-X,-Y", 2)
	f.Add("+X,+Y,+Z,-X,-Y,-Z", 3)
	f.Add("−Z +W", 4)
	f.Fuzz(func(t *testing.T, s string, n int) {
		o, err := ParseOrder(s, n)
		if err != nil {
			return
		}
		if err := o.valid(n); err != nil {
			t.Fatal(err)
		}
		back, err := ParseOrder(o.String(), n)
		if err != nil || back.String() != o.String() {
			t.Fatalf("%q: %v %v", s, back, err)
		}
	})
}

// TestAutomatonStates checks the RG history names and the dominance
// relation on a 2D Angara automaton.
func TestAutomatonStates(t *testing.T) {
	a := compile(AngaraMinus, DefaultOrder(2), 2)
	names := map[string]int{}
	for q := 0; q < a.nstates; q++ {
		names[a.stateName(q)] = q
	}
	for _, want := range []string{"begin", "end", "FS+X", "FS+Y", "LS-X", "LS-Y", "{+X}", "{+X,+Y}", "{+Y,-X}", "{-X,-Y}", "{+X,-Y}"} {
		if _, ok := names[want]; !ok {
			t.Errorf("missing state %s in %v", want, names)
		}
	}
	if len(names) != 9+4+1 {
		t.Errorf("%d states, want 3^2+2·2+1 = 14", len(names))
	}
	if !a.dominates(names["FS+Y"], names["{+X,+Y}"]) || !a.dominates(names["{+Y}"], names["{+X,+Y}"]) {
		t.Error("FS+Y and {+Y} should dominate {+X,+Y}")
	}
	if a.dominates(names["{+X}"], names["{+X,+Y}"]) || a.dominates(names["{+X,+Y}"], names["{+Y}"]) {
		t.Error("a set with another last direction, or a superset, cannot dominate")
	}
}
