package alloc

import (
	"fmt"
	"slices"

	"github.com/icn-hpc/icn/topology"
)

// State is the machine state (S_N, S_C) of seed 001 ch. 4: which nodes are
// busy (and with which job), on a torus whose failed links and nodes come
// from the graph. Unavailable nodes are the busy ones plus the failed ones.
type State struct {
	g     *topology.Graph
	dims  []int
	wrap  []bool
	owner []int32 // job id per node (0 = free)
	busy  int
}

// NewState returns an empty state on g, which must be a direct torus or
// mesh (every node a processor with coordinates, node id = mixed-radix
// coordinates with X fastest, as topology generates them).
func NewState(g *topology.Graph) (*State, error) {
	if !g.HasCoords() || !g.Direct() {
		return nil, fmt.Errorf("node selection needs a direct torus or mesh (e.g. torus:4x4x4), not %s", g.Name())
	}
	n := 1
	for _, d := range g.Dims() {
		n *= d
	}
	if n != g.NumNodes() {
		return nil, fmt.Errorf("%s: nodes do not form a full coordinate grid", g.Name())
	}
	for v := 0; v < n; v++ {
		if enc(g.Coord(v), g.Dims()) != v {
			return nil, fmt.Errorf("%s: node ids are not mixed-radix coordinates", g.Name())
		}
	}
	return &State{g: g, dims: g.Dims(), wrap: g.Wrap(), owner: make([]int32, n)}, nil
}

// Graph returns the network (with its failures).
func (s *State) Graph() *topology.Graph { return s.g }

// Dims returns the torus sizes.
func (s *State) Dims() []int { return s.dims }

// N returns the number of nodes.
func (s *State) N() int { return len(s.owner) }

// Clone returns an independent copy.
func (s *State) Clone() *State {
	c := *s
	c.owner = slices.Clone(s.owner)
	return &c
}

// WithGraph returns a copy of the state on another view of the same
// torus (e.g. after links or nodes failed or were repaired).
func (s *State) WithGraph(g *topology.Graph) (*State, error) {
	if !slices.Equal(g.Dims(), s.dims) {
		return nil, fmt.Errorf("graph dimensions %v differ from %v", g.Dims(), s.dims)
	}
	c := s.Clone()
	c.g = g
	return c, nil
}

// Available reports whether node v is neither busy nor failed.
func (s *State) Available(v int) bool { return s.owner[v] == 0 && !s.g.NodeFailed(v) }

// Owner returns the job holding v, or 0.
func (s *State) Owner(v int) int { return int(s.owner[v]) }

// Busy returns the number of busy nodes.
func (s *State) Busy() int { return s.busy }

// FreeCount returns the number of available nodes.
func (s *State) FreeCount() int {
	n := 0
	for v := range s.owner {
		if s.Available(v) {
			n++
		}
	}
	return n
}

// Occupy gives the nodes to job (job > 0). It fails, changing nothing, if
// any node is unavailable or listed twice.
func (s *State) Occupy(job int, nodes []int) error {
	if job <= 0 {
		return fmt.Errorf("job id %d must be positive", job)
	}
	seen := make(map[int]bool, len(nodes))
	for _, v := range nodes {
		if v < 0 || v >= len(s.owner) {
			return fmt.Errorf("node id %d out of range", v)
		}
		if seen[v] {
			return fmt.Errorf("node %s listed twice", s.g.NodeName(v))
		}
		seen[v] = true
		if o := s.owner[v]; o != 0 {
			return fmt.Errorf("node %s is busy with job %d", s.g.NodeName(v), o)
		}
		if s.g.NodeFailed(v) {
			return fmt.Errorf("node %s has failed", s.g.NodeName(v))
		}
	}
	for _, v := range nodes {
		s.owner[v] = int32(job)
	}
	s.busy += len(nodes)
	return nil
}

// Release frees every node of job and returns how many there were.
func (s *State) Release(job int) int {
	n := 0
	for v, o := range s.owner {
		if int(o) == job {
			s.owner[v] = 0
			n++
		}
	}
	s.busy -= n
	return n
}

// ReleaseNodes frees the given nodes of job (faster than Release when the
// caller knows them).
func (s *State) ReleaseNodes(job int, nodes []int) {
	for _, v := range nodes {
		if int(s.owner[v]) == job {
			s.owner[v] = 0
			s.busy--
		}
	}
}

func enc(c, dims []int) int {
	v := 0
	for i := len(dims) - 1; i >= 0; i-- {
		v = v*dims[i] + c[i]
	}
	return v
}

func dec(v int, dims, c []int) {
	for i, d := range dims {
		c[i] = v % d
		v /= d
	}
}
