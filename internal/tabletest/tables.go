package tabletest

import (
	"bytes"
	"context"
	"testing"

	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

// Case is one table: as built, and as its file (Table.WriteJSON) reads
// back.
type Case struct {
	Spec  string
	Table *routing.Table
	File  *routing.TableJSON
	// Large: its routes take more than 1 MiB of JSON (streamed answers).
	Large bool
}

// Cases builds the tables: angara* on tori of 2 and 3 dimensions, with a
// failed link, a failed node, transit nodes, one large table, and one on
// a torus with a mesh dimension.
func Cases(t testing.TB) []Case {
	t.Helper()
	var out []Case
	for _, tc := range []struct {
		spec, links, nodes string
		active, transit    []int
	}{
		{"torus:4x4x2", "", "", span(0, 32), nil},
		{"torus:5x4x3", "0.0.0+X", "", []int{0, 1, 2, 3, 4}, span(5, 40)},
		{"torus:4x4x4", "", "1.1.1", []int{0, 1, 2, 3}, span(4, 16)},
		{"torus:8x8x3", "", "", span(0, 160), nil},
		{"torus:4x3x2:mesh=Z", "0.0.0+X", "", span(0, 20), span(20, 24)},
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
		tb, err := r.Build(context.Background(), tc.active, tc.transit, routing.BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := tb.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		file, err := routing.ReadTableJSON(&buf)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Case{Spec: tc.spec, Table: tb, File: file, Large: tc.spec == "torus:8x8x3"})
	}
	return out
}

func span(a, b int) []int {
	var out []int
	for v := a; v < b; v++ {
		out = append(out, v)
	}
	return out
}
