package multicast

import (
	"fmt"
	"strings"
)

// Kind is the tree-building method of an engine.
type Kind uint8

const (
	// MinHop builds the tree top-down from the root along the min-hop
	// table, always taking the lowest-numbered port among equally short
	// ones (OpenSM's MINHOP-MC).
	MinHop Kind = iota
	// SSSP runs Dijkstra from the root over all switches with link weight
	// "large constant + groups already on the link" and keeps the paths to
	// the members (OpenSM's SSSP-MC).
	SSSP
	// FULB walks bottom-up from every member toward the root along min-hop
	// ports, taking the least-loaded port on ties and stopping at the first
	// switch already in the tree (the seed's FULB-MC).
	FULB
)

// Algo names one engine configuration.
type Algo struct {
	Kind Kind
	// Rotate picks the least-loaded switch among the equally good roots
	// (root rotation, the "-new" variants; always on for FULB).
	Rotate bool
	// OneGlobal prefers, among minimal paths, those crossing the fewest
	// global links (dragonfly): the seed's suggested fix so that no path
	// crosses two global links when a minimal path with one exists.
	OneGlobal bool
}

// Algos lists the engine names ParseAlgo accepts (without the +1g suffix).
var Algos = []string{"minhop", "minhop-new", "sssp", "sssp-new", "fulb"}

// ParseAlgo parses an engine name: minhop, minhop-new, sssp, sssp-new or
// fulb, optionally with the suffix "+1g" (sssp, sssp-new and fulb only) for
// the dragonfly rule that avoids paths crossing more than one global link.
func ParseAlgo(s string) (Algo, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	var a Algo
	if base, ok := strings.CutSuffix(name, "+1g"); ok {
		a.OneGlobal = true
		name = base
	}
	switch name {
	case "minhop", "minhop-mc":
		a.Kind = MinHop
	case "minhop-new", "minhop-mc-new":
		a.Kind, a.Rotate = MinHop, true
	case "sssp", "sssp-mc":
		a.Kind = SSSP
	case "sssp-new", "sssp-mc-new":
		a.Kind, a.Rotate = SSSP, true
	case "fulb", "fulb-mc":
		a.Kind, a.Rotate = FULB, true
	default:
		return Algo{}, fmt.Errorf("unknown multicast engine %q (want %s, optionally with +1g)", s, strings.Join(Algos, ", "))
	}
	if a.OneGlobal && a.Kind == MinHop {
		return Algo{}, fmt.Errorf("engine %q: +1g applies to sssp, sssp-new and fulb only", s)
	}
	return a, nil
}

// ParseAlgos parses a comma-separated list of engine names.
func ParseAlgos(s string) ([]Algo, error) {
	var out []Algo
	seen := map[Algo]bool{}
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		a, err := ParseAlgo(f)
		if err != nil {
			return nil, err
		}
		if seen[a] {
			return nil, fmt.Errorf("engine %q listed twice", a)
		}
		seen[a] = true
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no multicast engine given (want some of %s)", strings.Join(Algos, ", "))
	}
	return out, nil
}

// String returns the canonical name ParseAlgo accepts.
func (a Algo) String() string {
	var s string
	switch a.Kind {
	case MinHop:
		s = "minhop"
	case SSSP:
		s = "sssp"
	default:
		s = "fulb"
	}
	if a.Rotate && a.Kind != FULB {
		s += "-new"
	}
	if a.OneGlobal {
		s += "+1g"
	}
	return s
}

// RootMetric says how the root is chosen among all switches.
type RootMetric uint8

const (
	// RootMax minimises the largest distance to a member (OpenSM's default):
	// the tree height is then the smallest possible in the fabric.
	RootMax RootMetric = iota
	// RootMean minimises the total (mean) distance to the members.
	RootMean
)

// ParseRootMetric parses "max" or "mean".
func ParseRootMetric(s string) (RootMetric, error) {
	switch strings.ToLower(s) {
	case "max", "":
		return RootMax, nil
	case "mean", "avg", "average":
		return RootMean, nil
	}
	return 0, fmt.Errorf("unknown root metric %q (want max or mean)", s)
}

func (m RootMetric) String() string {
	if m == RootMean {
		return "mean"
	}
	return "max"
}

// Options tune every engine.
type Options struct {
	Root RootMetric
}
