package topology

import (
	"fmt"
	"strconv"
	"strings"
)

// splitList splits a list on commas, semicolons and white space (so a file
// of one item per line works too); '#' starts a comment to end of line.
func splitList(s string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		// '#' starts a comment at the start of a line or after white
		// space; inside an item it selects a parallel ring ("0.0+X#1").
		for i := 0; i < len(line); i++ {
			if line[i] == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t') {
				line = line[:i]
				break
			}
		}
		out = append(out, strings.FieldsFunc(line, func(r rune) bool {
			return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\r'
		})...)
	}
	return out
}

// ParseNodes resolves a node list: node names, or for coordinate graphs
// coordinate patterns whose components are a number, a range A-B, or *
// (e.g. "0.1.3", "0-1.*.2"). A node named twice is an error.
func (g *Graph) ParseNodes(s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, item := range splitList(s) {
		vs, err := g.resolveNodes(item)
		if err != nil {
			return nil, err
		}
		for _, v := range vs {
			if seen[v] {
				return nil, fmt.Errorf("node %s listed twice", g.names[v])
			}
			seen[v] = true
			out = append(out, v)
		}
	}
	return out, nil
}

func (g *Graph) resolveNodes(item string) ([]int, error) {
	if v := g.NodeByName(item); v >= 0 {
		return []int{v}, nil
	}
	if len(g.dims) > 0 {
		parts := strings.Split(item, ".")
		if len(parts) == len(g.dims) {
			ranges := make([][2]int, len(parts))
			ok := true
			for i, p := range parts {
				lo, hi, err := parseRange(p, g.dims[i])
				if err != nil {
					return nil, fmt.Errorf("node %q: %v", item, err)
				}
				if lo < 0 {
					ok = false
					break
				}
				ranges[i] = [2]int{lo, hi}
			}
			if ok {
				var out []int
				c := make([]int, len(g.dims))
				var rec func(i int)
				rec = func(i int) {
					if i < 0 {
						if v := g.NodeAt(c); v >= 0 {
							out = append(out, v)
						}
						return
					}
					for x := ranges[i][0]; x <= ranges[i][1]; x++ {
						c[i] = x
						rec(i - 1)
					}
				}
				rec(len(g.dims) - 1)
				return out, nil
			}
		} else if looksLikeCoord(item) {
			return nil, fmt.Errorf("node %q: the network has %d dimensions", item, len(g.dims))
		}
	}
	return nil, fmt.Errorf("unknown node %q", item)
}

func looksLikeCoord(s string) bool {
	return strings.Contains(s, ".") && strings.Trim(s, "0123456789.-*") == ""
}

// parseRange parses "3", "1-2" or "*" within [0, d). lo = -1 means the
// component is not numeric (the item is not a coordinate pattern).
func parseRange(p string, d int) (lo, hi int, err error) {
	if p == "*" {
		return 0, d - 1, nil
	}
	a, b, isRange := strings.Cut(p, "-")
	x, err1 := strconv.Atoi(a)
	if err1 != nil {
		return -1, -1, nil
	}
	y := x
	if isRange {
		if y, err1 = strconv.Atoi(b); err1 != nil {
			return -1, -1, nil
		}
	}
	if x < 0 || y >= d || x > y {
		return 0, 0, fmt.Errorf("coordinate %s outside 0..%d", p, d-1)
	}
	return x, y, nil
}

// LinkName names link l: for a link with a direction "<A>+<Dim>" (with
// "#k" for the k-th parallel ring when there are several), otherwise
// "<A>[<port>]".
func (g *Graph) LinkName(l int) string {
	lk := g.links[l]
	if lk.Dim >= 0 && len(g.dims) > 0 && int(lk.Dim) < len(g.dims) {
		name := g.names[lk.A] + "+" + DimName(int(lk.Dim))
		if k := g.copyIndex(l); k > 0 {
			name += "#" + strconv.Itoa(k)
		}
		return name
	}
	return fmt.Sprintf("%s[%d]", g.names[lk.A], lk.APort)
}

// ChannelName names channel c by its source and direction ("0.1.3+X",
// "1.1.3-X") or source port ("L1-0[3]").
func (g *Graph) ChannelName(c int) string {
	l := c >> 1
	if c&1 == 0 {
		return g.LinkName(l)
	}
	lk := g.links[l]
	if lk.Dim >= 0 && len(g.dims) > 0 && int(lk.Dim) < len(g.dims) {
		name := g.names[lk.B] + "-" + DimName(int(lk.Dim))
		if k := g.copyIndex(l); k > 0 {
			name += "#" + strconv.Itoa(k)
		}
		return name
	}
	return fmt.Sprintf("%s[%d]", g.names[lk.B], lk.BPort)
}

// copyIndex returns which parallel copy of its direction link l is at node
// A (0 for the first), counting links leaving A in the same dimension with
// the positive orientation in port order.
func (g *Graph) copyIndex(l int) int {
	lk := g.links[l]
	k := 0
	for _, c := range g.Out(int(lk.A)) {
		if int(c) == 2*l {
			return k
		}
		if c&1 == 0 && g.links[c>>1].Dim == lk.Dim {
			k++
		}
	}
	return 0
}

// ParseLinks resolves a list of link names: "<node>+X" / "<node>-Y"
// (optionally "#k" for the k-th parallel ring) on coordinate graphs,
// "<node>[<port>]", or "<nodeA>~<nodeB>" (all links between the two). A
// link always stands for the whole duplex cable, so "0.1.3+X" and
// "1.1.3-X" are the same link. Naming a link twice is an error.
func (g *Graph) ParseLinks(s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, item := range splitList(s) {
		ls, err := g.resolveLinks(item)
		if err != nil {
			return nil, err
		}
		for _, l := range ls {
			if seen[l] {
				return nil, fmt.Errorf("link %s listed twice (as %s)", g.LinkName(l), item)
			}
			seen[l] = true
			out = append(out, l)
		}
	}
	return out, nil
}

func (g *Graph) resolveLinks(item string) ([]int, error) {
	if i := strings.LastIndexByte(item, '['); i > 0 && strings.HasSuffix(item, "]") {
		v := g.NodeByName(item[:i])
		if v < 0 {
			return nil, fmt.Errorf("link %q: unknown node %q", item, item[:i])
		}
		p, err := strconv.Atoi(item[i+1 : len(item)-1])
		if err != nil || p < 1 || p > g.NumPorts(v) {
			return nil, fmt.Errorf("link %q: node %s has no port %s", item, item[:i], item[i+1:len(item)-1])
		}
		c := g.PortChannel(v, p)
		if c < 0 {
			return nil, fmt.Errorf("link %q: port %d of %s is not connected", item, p, item[:i])
		}
		return []int{c >> 1}, nil
	}
	if len(g.dims) > 0 {
		if l, ok, err := g.resolveDirLink(item); ok || err != nil {
			return l, err
		}
	}
	if a, b, ok := strings.Cut(item, "~"); ok {
		va, vb := g.NodeByName(a), g.NodeByName(b)
		if va < 0 || vb < 0 {
			return nil, fmt.Errorf("link %q: unknown node", item)
		}
		var out []int
		for _, c := range g.Out(va) {
			if g.Dst(int(c)) == vb {
				out = append(out, int(c)>>1)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("link %q: %s and %s are not adjacent", item, a, b)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown link %q (write NODE+X, NODE-Y, NODE[PORT] or NODE~NODE)", item)
}

// resolveDirLink parses "<node>(+|-)<Dim>[#k]". ok is false if the item is
// not of that shape.
func (g *Graph) resolveDirLink(item string) ([]int, bool, error) {
	copyIdx := 0
	base := item
	if i := strings.LastIndexByte(item, '#'); i > 0 {
		k, err := strconv.Atoi(item[i+1:])
		if err != nil || k < 0 {
			return nil, false, nil
		}
		copyIdx, base = k, item[:i]
	}
	for cut := len(base) - 2; cut > 0; cut-- {
		if base[cut] != '+' && base[cut] != '-' {
			continue
		}
		dim := DimIndex(base[cut+1:])
		if dim < 0 {
			continue
		}
		v := g.NodeByName(base[:cut])
		if v < 0 {
			vs, err := g.resolveNodes(base[:cut])
			if err != nil || len(vs) != 1 {
				return nil, true, fmt.Errorf("link %q: unknown node %q", item, base[:cut])
			}
			v = vs[0]
		}
		if dim >= len(g.dims) {
			return nil, true, fmt.Errorf("link %q: the network has no dimension %s", item, base[cut+1:])
		}
		positive := base[cut] == '+'
		k := 0
		for _, c := range g.Out(v) {
			d, s := g.Dir(int(c))
			if d != dim || (s > 0) != positive {
				continue
			}
			if k == copyIdx {
				return []int{int(c) >> 1}, true, nil
			}
			k++
		}
		if k == 0 {
			return nil, true, fmt.Errorf("link %q does not exist (no %c%s link at %s)", item, base[cut], DimName(dim), g.names[v])
		}
		return nil, true, fmt.Errorf("link %q: only %d parallel links in that direction", item, k)
	}
	return nil, false, nil
}

// ApplyFaults returns g with the links and nodes named in the two lists
// (either may be empty) failed in addition to existing failures.
func (g *Graph) ApplyFaults(linkList, nodeList string) (*Graph, error) {
	links, err := g.ParseLinks(linkList)
	if err != nil {
		return nil, err
	}
	nodes, err := g.ParseNodes(nodeList)
	if err != nil {
		return nil, err
	}
	if len(links) == 0 && len(nodes) == 0 {
		return g, nil
	}
	return g.AddFaults(links, nodes)
}
