package sched

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// NodeNamer names node v as Slurm would: prefix and the node number,
// zero-padded to the width of the largest number (nid0000…nid1023), or
// by a given list of host names (NamedNodes).
type NodeNamer struct {
	Prefix string
	Width  int
	names  []string
}

// NamedNodes returns a namer that calls node v names[v].
func NamedNodes(names []string) NodeNamer { return NodeNamer{names: names} }

// NewNodeNamer returns names for n nodes with the given prefix.
func NewNodeNamer(prefix string, n int) NodeNamer {
	return NodeNamer{Prefix: prefix, Width: len(strconv.Itoa(max(0, n-1)))}
}

// Name returns the name of node v.
func (nn NodeNamer) Name(v int) string {
	if nn.names != nil {
		return nn.names[v]
	}
	return fmt.Sprintf("%s%0*d", nn.Prefix, nn.Width, v)
}

// CheckHostName reports why s cannot be a Slurm node name in a hostlist
// expression (empty, or a character other than letters, digits, '-', '_'
// and '.'), or nil.
func CheckHostName(s string) error {
	if s == "" {
		return fmt.Errorf("empty host name")
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("host name %q: %q is not allowed in a Slurm node name", s, r)
		}
	}
	return nil
}

// Hostlist compresses host names into a Slurm hostlist expression:
// names that share a prefix and a numeric suffix of one width become
// ranges in brackets (nid[0001-0004,0007]); other names are listed as
// they are. Groups appear in order of first appearance, duplicates once.
func Hostlist(names []string) string {
	type key struct {
		prefix string
		width  int
	}
	var order []key
	nums := map[key][]int{}
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		p, d := splitNumber(n)
		if d == "" || len(d) > 18 {
			out = append(out, n)
			continue
		}
		k := key{p, len(d)}
		if _, ok := nums[k]; !ok {
			order = append(order, k)
		}
		x, _ := strconv.Atoi(d)
		nums[k] = append(nums[k], x)
	}
	var groups []string
	for _, k := range order {
		groups = append(groups, rangeExpr(k.prefix, k.width, nums[k]))
	}
	return strings.Join(append(groups, out...), ",")
}

// splitNumber splits a name into a prefix and its trailing digits.
func splitNumber(s string) (prefix, digits string) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	return s[:i], s[i:]
}

func rangeExpr(prefix string, width int, xs []int) string {
	sort.Ints(xs)
	if len(xs) == 1 {
		return fmt.Sprintf("%s%0*d", prefix, width, xs[0])
	}
	var parts []string
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprintf("%0*d", width, xs[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%0*d-%0*d", width, xs[i], width, xs[j]))
		}
		i = j + 1
	}
	return prefix + "[" + strings.Join(parts, ",") + "]"
}

// ExpandHostlist expands a hostlist expression of the form Hostlist
// writes (prefix[a-b,c],name,…) into names, as Slurm's parser does.
func ExpandHostlist(expr string) ([]string, error) {
	var out []string
	for len(expr) > 0 {
		i := strings.IndexAny(expr, "[,")
		if i < 0 {
			return append(out, expr), nil
		}
		if expr[i] == ',' {
			if i == 0 {
				return nil, fmt.Errorf("hostlist: empty name")
			}
			out = append(out, expr[:i])
			expr = expr[i+1:]
			continue
		}
		prefix := expr[:i]
		end := strings.IndexByte(expr[i:], ']')
		if end < 0 {
			return nil, fmt.Errorf("hostlist: unclosed bracket in %q", expr)
		}
		for _, part := range strings.Split(expr[i+1:i+end], ",") {
			lo, hi, isRange := strings.Cut(part, "-")
			a, err1 := strconv.Atoi(lo)
			b, err2 := a, error(nil)
			if isRange {
				b, err2 = strconv.Atoi(hi)
			}
			if err1 != nil || err2 != nil || b < a || b-a > 1<<20 {
				return nil, fmt.Errorf("hostlist: bad range %q", part)
			}
			for x := a; x <= b; x++ {
				out = append(out, fmt.Sprintf("%s%0*d", prefix, len(lo), x))
			}
		}
		expr = expr[i+end+1:]
		if strings.HasPrefix(expr, ",") {
			expr = expr[1:]
		} else if expr != "" {
			return nil, fmt.Errorf("hostlist: text %q after a bracket", expr)
		}
	}
	return out, nil
}
