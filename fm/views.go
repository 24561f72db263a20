package fm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/topology"
)

// The encoded answers of the service's largest reads, kept per version of
// what they show, so that reads of a 32 768-node fabric cost a copy.

// LoadsJSON is the encoded answer of GET /api/fabric/load (as writeJSON
// encodes it), kept while the jobs' link loads (their version) and the
// multicast EFI stay the same: a 32 768-node torus's answer takes ms to
// encode.
func (s *Service) LoadsJSON() []byte {
	e := s.loadsEntry()
	efi := s.mc.linkEFI()
	s.reads.mu.Lock()
	c := s.reads.loadAnswer
	s.reads.mu.Unlock()
	if c != nil && c.loads == e && slices.Equal(c.efi, efi) {
		return c.data
	}
	data := appendLoadsJSON(nil, e.value.([]int), efi)
	s.reads.mu.Lock()
	s.reads.loadAnswer = &loadAnswer{loads: e, efi: efi, data: data}
	s.reads.mu.Unlock()
	return data
}

// appendLoadsJSON appends GET /api/fabric/load's answer as encodeJSON
// writes map[string]any{"routes": routes, "efi": efi}: keys in order,
// indented one space a level up to client.IndentLimit bytes compact, then a
// newline.
func appendLoadsJSON(b []byte, routes, efi []int) []byte {
	compact := len(`{"efi":[],"routes":[]}`)
	for _, list := range [2][]int{efi, routes} {
		if list == nil {
			compact += 2 // null for []
		}
		for i, x := range list {
			if i > 0 {
				compact++
			}
			compact += len(strconv.AppendInt(make([]byte, 0, 20), int64(x), 10))
		}
	}
	indent := compact <= client.IndentLimit
	sep, open, next, end := ",", "[", ",", "]"
	if indent {
		open, next, end = "[\n  ", ",\n  ", "\n ]"
	}
	if b == nil {
		b = make([]byte, 0, compact+3*(len(routes)+len(efi))+32)
	}
	for k, kv := range [2]struct {
		key  string
		list []int
	}{{"efi", efi}, {"routes", routes}} {
		switch {
		case k > 0:
			b = append(b, sep...)
			if indent {
				b = append(b, "\n "...)
			}
		case indent:
			b = append(b, "{\n "...)
		default:
			b = append(b, '{')
		}
		b = append(b, '"')
		b = append(b, kv.key...)
		b = append(b, `":`...)
		if indent {
			b = append(b, ' ')
		}
		if kv.list == nil {
			b = append(b, "null"...)
			continue
		}
		if len(kv.list) == 0 {
			b = append(b, "[]"...)
			continue
		}
		b = append(b, open...)
		for i, x := range kv.list {
			if i > 0 {
				b = append(b, next...)
			}
			b = strconv.AppendInt(b, int64(x), 10)
		}
		b = append(b, end...)
	}
	if indent {
		b = append(b, '\n')
	}
	return append(b, "}\n"...)
}

// loadAnswer is an encoded answer of GET /api/fabric/load and what it
// was encoded from.
type loadAnswer struct {
	loads *readEntry // the jobs' loads (readCache.loads)
	efi   []int
	data  []byte
}

// JobsJSON is the encoded answer of GET /api/jobs (the running jobs, as
// writeJSON encodes them), computed once per version of the jobs from
// each job's JSON, encoded once per record (a change replaces a job's
// record): a version that changed one job of a machine's thousands of
// names costs that job's encoding and a copy.
func (s *Service) JobsJSON() []byte {
	e := s.readEntry(&s.reads.jobs, true)
	e.once.Do(func() {
		s.mu.RLock()
		recs := make([]*client.JobRecord, 0, len(s.jobs))
		for _, id := range sortedIDs(s.jobs) {
			recs = append(recs, s.jobs[id])
		}
		s.mu.RUnlock()
		s.reads.piecesMu.Lock()
		defer s.reads.piecesMu.Unlock()
		data, pieces, err := appendJobsJSON(nil, recs, s.reads.jobPieces)
		if err != nil {
			data = fmt.Appendf(nil, "{\"error\":%q}\n", err.Error())
		}
		s.reads.jobPieces = pieces
		e.value = data
	})
	return e.value.([]byte)
}

// jobPiece is one job's part of GET /api/jobs's answer: the JSON of its
// record (without the table's routes, as Service.Jobs lists it) compact,
// and indented one level inside the list (made when first needed).
type jobPiece struct {
	rec               *client.JobRecord
	compact, indented []byte
}

// appendJobsJSON appends the answer of GET /api/jobs for the running
// jobs recs (in id order) as client.Encode encodes the list (indented up
// to client.IndentLimit, then a newline), from the pieces of old that
// belong to the same records; it returns the pieces of recs.
func appendJobsJSON(b []byte, recs []*client.JobRecord, old map[int]*jobPiece) ([]byte, map[int]*jobPiece, error) {
	pieces := make(map[int]*jobPiece, len(recs))
	size := 2 + max(0, len(recs)-1) // [, ] and the commas
	list := make([]*jobPiece, len(recs))
	for i, r := range recs {
		p := old[r.ID]
		if p == nil || p.rec != r {
			c := *r
			c.Table, c.StoredRoutes = nil, nil
			data, err := client.MarshalJSON(&c)
			if err != nil {
				return nil, old, err
			}
			p = &jobPiece{rec: r, compact: data}
		}
		pieces[r.ID], list[i] = p, p
		size += len(p.compact)
	}
	if len(recs) == 0 {
		return append(b, "[]\n"...), pieces, nil
	}
	if size > client.IndentLimit {
		b = slices.Grow(b, size+1)
		b = append(b, '[')
		for i, p := range list {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, p.compact...)
		}
		return append(b, "]\n"...), pieces, nil
	}
	// Indented as json.Indent(…, "", " ") indents the list: each element
	// on its own line one level in, its inner lines one level deeper.
	b = append(b, "[\n "...)
	for i, p := range list {
		if p.indented == nil {
			var buf bytes.Buffer
			if err := json.Indent(&buf, p.compact, " ", " "); err != nil {
				return nil, old, err
			}
			p.indented = buf.Bytes()
		}
		if i > 0 {
			b = append(b, ",\n "...)
		}
		b = append(b, p.indented...)
	}
	return append(b, "\n]\n"...), pieces, nil
}

// FabricJSON is the encoded answer of GET /api/fabric for the current
// fabric and jobs, computed once per version of them: assembled from the
// nodes' and links' pieces encoded once (fabricPieces), with the jobs and
// failure flags of the version; the bytes are those of
// client.Encode(s.Fabric()).
func (s *Service) FabricJSON() []byte {
	e := s.readEntry(&s.reads.fabric, true)
	e.once.Do(func() {
		s.mu.RLock()
		g, state := s.g, s.state
		if state != nil {
			state = state.Clone()
		}
		head := client.FabricView{Spec: s.fabric.Spec, Dims: g.Dims(), FailedLinks: slices.Clone(s.fabric.FailedLinks),
			FailedNodes: slices.Clone(s.fabric.FailedNodes), Rules: s.rules(), Jobs: s.noJobs == "", NoJobs: s.noJobs}
		s.mu.RUnlock()
		s.piecesOnce.Do(func() { s.pieces = newFabricPieces(g) })
		data, err := s.pieces.appendJSON(nil, &head, g, state)
		if err == nil && len(data) <= client.IndentLimit {
			var buf bytes.Buffer
			if json.Indent(&buf, data, "", " ") == nil {
				data = buf.Bytes()
			}
		}
		if err != nil {
			data = fmt.Appendf(nil, "{\"error\":%q}", err.Error())
		}
		e.value = append(data, '\n')
	})
	return e.value.([]byte)
}

// FabricGridJSON is the encoded answer of GET /api/fabric?compact=1 for
// the current fabric and jobs, computed once per version of them: on a
// plain grid (isPlainGrid) a client.FabricGrid, else FabricJSON's answer.
func (s *Service) FabricGridJSON() []byte {
	s.mu.RLock()
	g := s.g
	s.mu.RUnlock()
	s.gridOnce.Do(func() { s.plainGrid = isPlainGrid(g) })
	if !s.plainGrid {
		return s.FabricJSON()
	}
	e := s.readEntry(&s.reads.grid, true)
	e.once.Do(func() {
		s.mu.RLock()
		g, state := s.g, s.state
		v := client.FabricGrid{Spec: s.fabric.Spec, Dims: g.Dims(), Wrap: g.Wrap(), Grid: true,
			FailedLinks: slices.Clone(s.fabric.FailedLinks), FailedNodes: slices.Clone(s.fabric.FailedNodes),
			Rules: s.rules(), Jobs: s.noJobs == "", NoJobs: s.noJobs}
		s.mu.RUnlock()
		// The state is replaced by each commit, never changed in place.
		v.NodeJobs = make([]int, g.NumNodes())
		if state != nil {
			for i := range v.NodeJobs {
				v.NodeJobs[i] = state.Owner(i)
			}
		}
		v.FailedNodeIDs = append([]int{}, g.FailedNodes()...)
		v.FailedLinkIDs = []int{}
		for l := range g.NumLinks() {
			if g.LinkFailed(l) { // a failed node's links too
				v.FailedLinkIDs = append(v.FailedLinkIDs, l)
			}
		}
		for _, list := range []*[]string{&v.FailedLinks, &v.FailedNodes} {
			if *list == nil {
				*list = []string{}
			}
		}
		// Compact whatever its size: a list of 158 976 jobs indented
		// takes 0.8 MB, 0.3 MB without.
		data, err := json.Marshal(v)
		if err != nil {
			data = fmt.Appendf(nil, "{\"error\":%q}", err.Error())
		}
		e.value = append(data, '\n')
	})
	return e.value.([]byte)
}

// isPlainGrid reports whether g's nodes and links are those that
// client.FabricGrid describes: nodes in mixed-radix order of their
// coordinates, named by them, all end nodes; per node and dimension in
// order, one link to the next node along the dimension (a mesh dimension
// none from its last node); nothing else.
func isPlainGrid(g *topology.Graph) bool {
	dims, wrap := g.Dims(), g.Wrap()
	if len(dims) == 0 || len(wrap) != len(dims) {
		return false
	}
	n := 1
	for _, d := range dims {
		n *= d
	}
	if g.NumNodes() != n {
		return false
	}
	c := make([]int, len(dims))
	l := 0
	for v := range n {
		if g.Kind(v) != topology.Endpoint || g.NodeName(v) != topology.CoordString(c) {
			return false
		}
		for i := range dims {
			if g.CoordAt(v, i) != c[i] {
				return false
			}
		}
		stride := 1
		for i, d := range dims {
			if wrap[i] || c[i]+1 < d {
				next := v + stride
				if c[i]+1 == d {
					next = v - (d-1)*stride
				}
				if l >= g.NumLinks() {
					return false
				}
				lk := g.Link(l)
				if int(lk.A) != v || int(lk.B) != next || int(lk.Dim) != i {
					return false
				}
				l++
			}
			stride *= d
		}
		// The next coordinates, X fastest.
		for i := range c {
			if c[i]++; c[i] < dims[i] {
				break
			}
			c[i] = 0
		}
	}
	return l == g.NumLinks()
}

// fabricPieces are the parts of GET /api/fabric's answer that neither
// failures nor jobs change, encoded once: per node its JSON up to its
// coordinates (head) and from its level on (tail), per link up to its
// dimension; between them go the version's "failed" and "job" fields.
type fabricPieces struct {
	nodes  []byte
	nodeAt []int32 // node v: head nodes[nodeAt[2v]:nodeAt[2v+1]], tail up to nodeAt[2v+2]
	links  []byte
	linkAt []int32 // link l: links[linkAt[l]:linkAt[l+1]]
}

// jsonString appends s as encoding/json writes a string.
func jsonString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

func newFabricPieces(g *topology.Graph) *fabricPieces {
	p := &fabricPieces{nodeAt: make([]int32, 0, 2*g.NumNodes()+1), linkAt: make([]int32, 0, g.NumLinks()+1)}
	kinds := map[topology.Kind][]byte{}
	for v := range g.NumNodes() {
		p.nodeAt = append(p.nodeAt, int32(len(p.nodes)))
		b := append(p.nodes, `{"id":`...)
		b = strconv.AppendInt(b, int64(v), 10)
		b = jsonString(append(b, `,"name":`...), g.NodeName(v))
		k, ok := kinds[g.Kind(v)]
		if !ok {
			k = jsonString(nil, g.Kind(v).String())
			kinds[g.Kind(v)] = k
		}
		b = append(append(b, `,"kind":`...), k...)
		if g.HasCoords() && len(g.Dims()) > 0 {
			b = append(b, `,"coord":[`...)
			for i := range g.Dims() {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, int64(g.CoordAt(v, i)), 10)
			}
			b = append(b, ']')
		}
		p.nodeAt = append(p.nodeAt, int32(len(b)))
		if l := g.Level(v); l >= 0 {
			b = strconv.AppendInt(append(b, `,"level":`...), int64(l), 10)
		}
		if gr := g.Group(v); gr >= 0 {
			b = strconv.AppendInt(append(b, `,"group":`...), int64(gr), 10)
		}
		p.nodes = append(b, '}')
	}
	p.nodeAt = append(p.nodeAt, int32(len(p.nodes)))
	for l := range g.NumLinks() {
		p.linkAt = append(p.linkAt, int32(len(p.links)))
		lk := g.Link(l)
		b := strconv.AppendInt(append(p.links, `{"id":`...), int64(l), 10)
		b = jsonString(append(b, `,"name":`...), g.LinkName(l))
		b = strconv.AppendInt(append(b, `,"a":`...), int64(lk.A), 10)
		b = strconv.AppendInt(append(b, `,"b":`...), int64(lk.B), 10)
		p.links = strconv.AppendInt(append(b, `,"dim":`...), int64(lk.Dim), 10)
	}
	p.linkAt = append(p.linkAt, int32(len(p.links)))
	return p
}

// appendJSON appends the compact JSON of the fabric view head (its nodes
// and links left out) with the nodes and links of g, the jobs holding
// them in state (nil: none), as encoding/json writes FabricView.
func (p *fabricPieces) appendJSON(b []byte, head *client.FabricView, g *topology.Graph, state *alloc.State) ([]byte, error) {
	if len(p.nodeAt) != 2*g.NumNodes()+1 || len(p.linkAt) != g.NumLinks()+1 {
		return nil, fmt.Errorf("internal error: the fabric's encoded pieces are of another fabric")
	}
	if b == nil {
		b = make([]byte, 0, len(p.nodes)+len(p.links)+16*g.NumLinks()/8+32*g.NumNodes()/8+4096)
	}
	b = jsonString(append(b, `{"spec":`...), head.Spec)
	if len(head.Dims) > 0 {
		b = append(b, `,"dims":[`...)
		for i, d := range head.Dims {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, int64(d), 10)
		}
		b = append(b, ']')
	}
	b = append(b, `,"nodes":[`...)
	for v := range g.NumNodes() {
		if v > 0 {
			b = append(b, ',')
		}
		b = append(b, p.nodes[p.nodeAt[2*v]:p.nodeAt[2*v+1]]...)
		if g.NodeFailed(v) {
			b = append(b, `,"failed":true`...)
		}
		if state != nil {
			if j := state.Owner(v); j != 0 {
				b = strconv.AppendInt(append(b, `,"job":`...), int64(j), 10)
			}
		}
		b = append(b, p.nodes[p.nodeAt[2*v+1]:p.nodeAt[2*v+2]]...)
	}
	b = append(b, `],"links":[`...)
	for l := range g.NumLinks() {
		if l > 0 {
			b = append(b, ',')
		}
		b = append(b, p.links[p.linkAt[l]:p.linkAt[l+1]]...)
		if g.LinkFailed(l) {
			b = append(b, `,"failed":true`...)
		}
		b = append(b, '}')
	}
	b = append(b, `],"failed_links":`...)
	for i, list := range [2][]string{head.FailedLinks, head.FailedNodes} {
		if i == 1 {
			b = append(b, `,"failed_nodes":`...)
		}
		if list == nil {
			list = []string{}
		}
		q, err := json.Marshal(list)
		if err != nil {
			return nil, err
		}
		b = append(b, q...)
	}
	b = jsonString(append(b, `,"rules":`...), head.Rules)
	b = strconv.AppendBool(append(b, `,"jobs":`...), head.Jobs)
	if head.NoJobs != "" {
		b = jsonString(append(b, `,"no_jobs":`...), head.NoJobs)
	}
	return append(b, '}'), nil
}

// RunTicker calls Tick every interval until stop is closed or the
// service closes.
func (s *Service) RunTicker(interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	closing := s.closing()
	for {
		select {
		case <-stop:
			return
		case <-closing:
			return
		case <-t.C:
			s.Tick()
		}
	}
}
