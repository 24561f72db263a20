package topology

import (
	"slices"
	"strings"
	"testing"
)

// LinksMissingFrom finds exactly the links a second copy of the fabric
// lost (by GUID and port), whatever the copy's node order.
func TestLinksMissingFrom(t *testing.T) {
	g, err := Parse("fattree:k=4,n=3")
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := g.WriteIBNet(&text); err != nil {
		t.Fatal(err)
	}
	d, err := ParseIBNet(strings.NewReader(text.String()), "copy")
	if err != nil {
		t.Fatal(err)
	}
	if m := g.LinksMissingFrom(d); len(m) != 0 {
		t.Fatalf("an identical copy misses %d links", len(m))
	}
	lost := []int{3, 17, 40}
	// The same links in the copy, found by their ends' names and ports.
	var dl []int
	for _, l := range lost {
		c := 2 * l
		for _, dc := range d.Out(d.NodeByName(g.NodeName(g.Src(c)))) {
			if d.SrcPort(int(dc)) == g.SrcPort(c) {
				dl = append(dl, int(dc)>>1)
			}
		}
	}
	d2, err := d.WithFaults(dl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := g.LinksMissingFrom(d2); !slices.Equal(m, lost) {
		t.Fatalf("missing %v, want %v", m, lost)
	}
}
