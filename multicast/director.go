package multicast

import (
	"fmt"
	"strings"

	"github.com/icn-hpc/icn/topology"
)

// DirectorPrefix starts the spec of a pruned fat tree topped by one
// director switch (topology family "director").
const DirectorPrefix = "director:"

// Director builds a 3-level pruned fat tree under one director switch
// (see topology.Director).
func Director(pods, leaves, ends, l2, cables int) (*topology.Graph, error) {
	return topology.Director(pods, leaves, ends, l2, cables)
}

// ParseDirector parses "director:pods=P,leaves=L,ends=E,l2=M,cables=C"
// (also "director:bluelight" and "director:taihulight").
func ParseDirector(spec string) (*topology.Graph, error) {
	if !strings.HasPrefix(spec, DirectorPrefix) {
		return nil, fmt.Errorf("not a director spec: %q", spec)
	}
	return topology.Parse(spec)
}

// ParseFabric builds a fabric from a topology spec.
func ParseFabric(spec string) (*topology.Graph, error) { return topology.Parse(spec) }
