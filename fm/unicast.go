package fm

import (
	"fmt"
	"slices"
	"time"

	"github.com/icn-hpc/icn/internal/atomicfile"
	"github.com/icn-hpc/icn/topology"
	"github.com/icn-hpc/icn/unicast"
)

// UnicastConfig asks the service to keep a switched fabric's unicast
// forwarding tables current: computed at start and after every failure
// or repair, and written as OpenSM's file engine reads them.
type UnicastConfig struct {
	Engine string // unicast engine: ftree, updn, minhop, sssp, dfsssp, …
	// LFTOut is the dump OpenSM loads (opensm -R file -U LFTOut); it is
	// replaced atomically, so OpenSM never reads half a file, and kept as
	// it was when a computation or a write fails.
	LFTOut  string
	Workers int // cores for routing (0: all but one)
}

// UnicastStatus reports the tables of the current fabric.
type UnicastStatus struct {
	Engine  string    `json:"engine"`
	LFTOut  string    `json:"lft_out"`
	Seconds float64   `json:"seconds"`
	Updated time.Time `json:"updated"`
	// Written: the dump holds the tables of the current fabric.
	Written bool `json:"written"`
	// Error says why the tables of the current fabric are not written
	// (the previous dump is left in place).
	Error string `json:"error,omitempty"`
	// Disconnected names the hosts no switch reaches any more.
	Disconnected []string `json:"disconnected_hosts,omitempty"`
	Reachable    bool     `json:"reachable"`
}

// refreshUnicast computes the tables of fabric g and writes the dump
// (callers serialise: Open, and ChangeFailure under changeMu).
func (s *Service) refreshUnicast(g *topology.Graph) *UnicastStatus {
	u := s.cfg.Unicast
	if u == nil {
		return nil
	}
	st := &UnicastStatus{Engine: u.Engine, LFTOut: u.LFTOut, Updated: s.cfg.Now().UTC(), Disconnected: disconnectedHosts(g)}
	start := time.Now()
	err := func() error {
		f, err := unicast.NewFabric(g, s.uniAnn)
		if err != nil {
			return err
		}
		w := u.Workers
		if w == 0 {
			w = computeWorkers()
		}
		res, err := unicast.Route(f, unicast.Options{Engine: u.Engine, Workers: w})
		if err != nil {
			return err
		}
		st.Reachable = len(st.Disconnected) == 0
		return atomicfile.Write(u.LFTOut, res.Tables.WriteDump)
	}()
	st.Seconds = time.Since(start).Seconds()
	if err != nil {
		st.Error = fmt.Sprintf("tables not written (the previous %s is left in place): %v", u.LFTOut, err)
	} else {
		st.Written = true
	}
	s.uniMu.Lock()
	s.uni = st
	s.uniMu.Unlock()
	return st
}

// Unicast returns the status of the unicast tables (nil: not kept).
func (s *Service) Unicast() *UnicastStatus {
	s.uniMu.Lock()
	defer s.uniMu.Unlock()
	if s.uni == nil {
		return nil
	}
	c := *s.uni
	return &c
}

// disconnectedHosts lists the live end nodes of g outside the largest
// group of switches still joined by working links (or with no working
// link at all).
func disconnectedHosts(g *topology.Graph) []string {
	n := g.NumNodes()
	comp := make([]int, n)
	for i := range comp {
		comp[i] = -1
	}
	size := map[int]int{}
	for v := 0; v < n; v++ {
		if comp[v] >= 0 || g.Kind(v) != topology.Switch || g.NodeFailed(v) {
			continue
		}
		queue := []int{v}
		comp[v] = v
		for len(queue) > 0 {
			x := queue[0]
			queue = queue[1:]
			size[v]++
			for _, c := range g.Out(x) {
				y := g.Dst(int(c))
				if g.Up(int(c)) && comp[y] < 0 && g.Kind(y) == topology.Switch {
					comp[y] = v
					queue = append(queue, y)
				}
			}
		}
	}
	main, best := -1, 0
	for c, k := range size {
		if k > best || k == best && c < main {
			main, best = c, k
		}
	}
	var out []string
	for v := 0; v < n; v++ {
		if g.Kind(v) == topology.Switch || g.NodeFailed(v) {
			continue
		}
		joined := false
		for _, c := range g.Out(v) {
			if y := g.Dst(int(c)); g.Up(int(c)) && g.Kind(y) == topology.Switch && comp[y] == main {
				joined = true
				break
			}
		}
		if !joined {
			out = append(out, g.NodeName(v))
		}
	}
	slices.Sort(out)
	return out
}

// Graph returns the current fabric (failures included); callers must not
// change it.
func (s *Service) Graph() *topology.Graph {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.g
}
