package fm

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

// TestTableJSONMatchesFileRoundTrip: the table built in memory equals the
// one written by Table.WriteJSON and read back, with and without failures
// and transit nodes (its JSON: fm/client's TestJobJSON).
func TestTableJSONMatchesFileRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		spec, links, nodes string
		active, transit    []int
	}{
		{"torus:4x4x2", "", "", span(0, 32), nil},
		{"torus:5x4x3", "0.0.0+X", "", []int{0, 1, 2, 3, 4}, span(5, 40)},
		{"torus:4x4x4", "", "1.1.1", []int{0, 1, 2, 3}, span(4, 16)},
		{"torus:8x8x3", "", "", span(0, 160), nil}, // streamed in several pieces
	} {
		g, err := topology.Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if g, err = g.ApplyFaults(tc.links, tc.nodes); err != nil {
			t.Fatal(err)
		}
		rule, _ := routing.ParseRule("angara*")
		r, err := routing.NewRouter(g, rule)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := r.BuildTable(tc.active, tc.transit, routing.BFS)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := tb.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		want, err := routing.ReadTableJSON(&buf)
		if err != nil {
			t.Fatal(err)
		}
		got := tableJSON(tb)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: direct table differs from the file round trip:\n%+v\n%+v", tc.spec, got, want)
		}
	}
}

func span(a, b int) []int {
	var out []int
	for v := a; v < b; v++ {
		out = append(out, v)
	}
	return out
}
