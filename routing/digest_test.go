package routing

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"testing"
)

// tableDigest is the SHA-256 of a table's route codes, channel loads and
// figures, as 16 hex digits.
func tableDigest(tb *Table) string {
	h := sha256.New()
	h.Write(tb.codes)
	binary.Write(h, binary.LittleEndian, tb.loads)
	fmt.Fprintf(h, "%+v %d %d %v", tb.Figures, tb.SumLength, tb.Channels, tb.DeadlockFree)
	return fmt.Sprintf("%x", h.Sum(nil)[:8])
}

// digestCase is a table whose digest is pinned.
type digestCase struct {
	name, spec, fail string
	kind             Kind
	active, transit  string // node lists ("" active: every node)
	exact            bool
	interleaved      bool // interleaved chains even below cheapOrderNodes
	want             string
}

// digestCases cover each way of ordering the sources: one source per
// round (B = 1), the order from one translated row (whole fault-free
// torus), from a distance search per source (failures; ExactOrder), the
// interleaved chains, and a set numbered in its own frame (it wraps
// around a ring). The digests are those of the tables built before the
// rounds ran on a pool of workers (and must stay so: the pool changes
// the speed, not the table).
var digestCases = []digestCase{
	{name: "8x8x4 all", spec: "8x8x4", kind: AngaraStar, want: "2609e4a70baa304f"},
	{name: "8x8x8 all", spec: "8x8x8", kind: AngaraStar, want: "dca28b9d9e114927"},
	{name: "8x8x6 failed", spec: "8x8x6", fail: "1.1.0+X,3.5.2+Y,6.2.4+Z", kind: AngaraStar, want: "3dcb40be4ca58ebf"},
	{name: "8x8x6 failed interleaved", spec: "8x8x6", fail: "1.1.0+X,3.5.2+Y,6.2.4+Z", kind: AngaraStar, interleaved: true, want: "01ab0e5d09193c59"},
	{name: "8x8x6 job exact", spec: "8x8x6", fail: "2.2.1+X,5.6.2+Y", kind: AngaraStar, active: "*.*.0-4", transit: "*.*.5", exact: true, interleaved: true, want: "48c2389748e7f76c"},
	{name: "6x6x6 small job", spec: "6x6x6", fail: "1.1.1+X", kind: Angara, active: "0-4.0-4.0-4", transit: "5.*.*", want: "479786af09f715bd"},
	{name: "8x8x8 wrapping job", spec: "8x8x8", fail: "3.3.7+X", kind: AngaraStar, active: "*.*.6-7,*.*.0", transit: "*.*.1", want: "29595dc5fcdff5c2"},
	{name: "8x8x6 angara failed", spec: "8x8x6", fail: "4.4.4+Y", kind: Angara, want: "c211b9acbcdbed7d"},
}

func (c digestCase) build(t *testing.T, workers int) *Table {
	t.Helper()
	g := mustTorus(t, c.spec)
	var err error
	if g, err = g.ApplyFaults(c.fail, ""); err != nil {
		t.Fatal(err)
	}
	active := allNodes(g.NumNodes())
	var transit []int
	if c.active != "" {
		if active, err = g.ParseNodes(c.active); err != nil {
			t.Fatal(err)
		}
		if c.transit != "" {
			if transit, err = g.ParseNodes(c.transit); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := mustRouter(t, g, c.kind)
	if c.interleaved {
		r.tune.cheapOrderNodes = 0
	}
	tb, err := r.Build(context.Background(), active, transit, BuildOptions{Workers: workers, ExactOrder: c.exact})
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	return tb
}

// TestTableDigests pins the tables of digestCases, built with 1, 2, 3 and
// 8 workers.
func TestTableDigests(t *testing.T) {
	for _, c := range digestCases {
		for _, w := range []int{1, 2, 3, 8} {
			if got := tableDigest(c.build(t, w)); got != c.want {
				t.Errorf("%s, %d workers: digest %s, want %s", c.name, w, got, c.want)
			}
		}
	}
}
