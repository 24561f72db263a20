package main

import (
	"slices"
	"strconv"
	"strings"

	"github.com/icn-hpc/icn/topology"
)

// maxListedNodes is the most node names `icn alloc` lists in its table;
// larger sets are shown as coordinate patterns.
const maxListedNodes = 16

// maxPatterns is the most coordinate patterns the table shows for a set.
const maxPatterns = 8

// nodePatterns describes a set of nodes of a coordinate graph as
// coordinate patterns of the form --busy accepts ("0-3.*.5"): nodes are
// grouped by their last coordinate, the groups' patterns for the lower
// coordinates computed the same way, and neighbouring values with the
// same lower patterns joined into a range (* for a whole dimension). The
// patterns name exactly the set, each node once.
func nodePatterns(g *topology.Graph, nodes []int) []string {
	dims := g.Dims()
	coords := make([][]int, len(nodes))
	for i, v := range nodes {
		coords[i] = g.Coord(v)
	}
	return patternsOf(dims, coords, len(dims)-1)
}

// patternsOf returns the patterns of the points (coordinates 0..k used)
// for dimensions 0..k.
func patternsOf(dims []int, pts [][]int, k int) []string {
	if len(pts) == 0 {
		return nil
	}
	byValue := map[int][][]int{}
	for _, p := range pts {
		byValue[p[k]] = append(byValue[p[k]], p)
	}
	values := make([]int, 0, len(byValue))
	for x := range byValue {
		values = append(values, x)
	}
	slices.Sort(values)
	sub := make([]string, len(values)) // lower patterns per value, joined
	lists := make([][]string, len(values))
	for i, x := range values {
		if k > 0 {
			lists[i] = patternsOf(dims, byValue[x], k-1)
		} else {
			lists[i] = []string{""}
		}
		sub[i] = strings.Join(lists[i], ",")
	}
	var out []string
	for i := 0; i < len(values); {
		j := i
		for j+1 < len(values) && values[j+1] == values[j]+1 && sub[j+1] == sub[i] {
			j++
		}
		r := coordRange(values[i], values[j], dims[k])
		for _, s := range lists[i] {
			if k > 0 {
				s += "."
			}
			out = append(out, s+r)
		}
		i = j + 1
	}
	return out
}

// coordRange writes the coordinates lo..hi of a dimension of size d.
func coordRange(lo, hi, d int) string {
	switch {
	case lo == 0 && hi == d-1 && d > 1:
		return "*"
	case lo == hi:
		return strconv.Itoa(lo)
	}
	return strconv.Itoa(lo) + "-" + strconv.Itoa(hi)
}

// nodeSummary is how the alloc table shows a node list: every name for
// small sets, else the count and the coordinate patterns when there are
// few of them, else the count, the first names and a pointer to --json.
func nodeSummary(g *topology.Graph, nodes []int, names []string) string {
	if len(names) <= maxListedNodes {
		return strings.Join(names, " ")
	}
	count := strconv.Itoa(len(names)) + " nodes: "
	if g.HasCoords() {
		if p := nodePatterns(g, nodes); len(p) <= maxPatterns {
			return count + strings.Join(p, " ")
		}
	}
	return count + strings.Join(names[:maxListedNodes/2], " ") + " … (--json for all)"
}
