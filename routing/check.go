package routing

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/icn-hpc/icn/internal/par"
	"github.com/icn-hpc/icn/topology"
)

// Checking table files in bounded memory: the routes are decoded one at a
// time (JSON or compact), handed to all cores in batches, checked and
// forgotten; only per-channel loads and dependencies, and one bit per
// ordered pair of active nodes, are kept.

// routerForFile rebuilds the network and rule a table file names (its
// sizes, mesh dimensions by letter and failures), with extra failures
// (lists as topology.Graph.ApplyFaults accepts).
func routerForFile(dims []int, mesh []string, rules string, order, failedLinks, failedNodes []string, extraLinks, extraNodes string) (*Router, error) {
	if err := checkDims(dims); err != nil {
		return nil, fmt.Errorf("table file: %v", err)
	}
	wrap, err := meshFlags(mesh, len(dims))
	if err != nil {
		return nil, fmt.Errorf("table file: %v", err)
	}
	g, err := topology.Parse(topology.TorusSpec(dims, wrap))
	if err != nil {
		return nil, fmt.Errorf("table file: %v", err)
	}
	if g, err = g.ApplyFaults(strings.Join(failedLinks, ","), strings.Join(failedNodes, ",")); err != nil {
		return nil, fmt.Errorf("table file: %v", err)
	}
	if g, err = g.ApplyFaults(extraLinks, extraNodes); err != nil {
		return nil, err
	}
	rule, err := ParseRule(rules)
	if err != nil {
		return nil, fmt.Errorf("table file: %v", err)
	}
	if len(order) > 0 {
		if rule.Order, err = ParseOrder(strings.Join(order, ","), len(dims)); err != nil {
			return nil, fmt.Errorf("table file: %v", err)
		}
	}
	return NewRouter(g, rule)
}

// routeBatch is a run of routes handed to a checking worker.
type routeBatch struct {
	rec      []int32 // record number of each route (0-based)
	src, dst []int32
	end      []int32 // end of each route's directions in dirs
	dirs     []Dir
}

const routeBatchSize = 4096

// streamCheck checks a stream of routes for one set.
type streamCheck struct {
	r       *Router
	active  []int
	transit []int
	actIdx  []int32 // per node: active index, −1 if not active
	seen    []uint64
	rc      *routeChecker
	ws      []*verifyWorker
	viol    []Violation
	rec     int
	cur     *routeBatch
	work    chan *routeBatch
	free    chan *routeBatch
	wg      sync.WaitGroup
}

// newStreamCheck prepares the check of routes over active ∪ transit
// (node ids; active sorted) and starts the workers.
func (r *Router) newStreamCheck(active, transit []int, workers int) *streamCheck {
	nodes := r.t.nodes
	sc := &streamCheck{r: r, active: active, transit: transit, actIdx: make([]int32, nodes)}
	for i := range sc.actIdx {
		sc.actIdx[i] = -1
	}
	inSet := make([]bool, nodes)
	set := make([]int, 0, len(active)+len(transit))
	for i, v := range active {
		sc.actIdx[v] = int32(i)
		inSet[v] = true
		set = append(set, v)
	}
	for _, v := range transit {
		inSet[v] = true
		set = append(set, v)
	}
	m := len(active)
	sc.seen = make([]uint64, (m*m+63)/64)
	sc.rc = r.newRouteChecker(set, inSet)
	nw := par.Workers(workers)
	sc.ws = make([]*verifyWorker, nw)
	sc.work = make(chan *routeBatch, nw)
	sc.free = make(chan *routeBatch, 2*nw+1)
	for i := 0; i < 2*nw+1; i++ {
		sc.free <- &routeBatch{}
	}
	for i := range sc.ws {
		w := sc.rc.newWorker()
		sc.ws[i] = w
		sc.wg.Add(1)
		go func() {
			defer sc.wg.Done()
			var dirs []Dir
			for b := range sc.work {
				start := int32(0)
				for k := range b.src {
					dirs = append(dirs[:0], b.dirs[start:b.end[k]]...)
					start = b.end[k]
					sc.rc.check(w, int(b.rec[k]), int(b.src[k]), int(b.dst[k]), dirs)
				}
				sc.free <- b
			}
		}()
	}
	return sc
}

func (sc *streamCheck) addViolation(v Violation) {
	if len(sc.viol) < maxViolations {
		sc.viol = append(sc.viol, v)
	}
}

// emit takes one route (node ids); pair-level problems (an endpoint that
// is not active, a route to itself, a second route for a pair) are found
// here, the rest by the workers.
func (sc *streamCheck) emit(src, dst int, dirs []Dir) {
	rec := sc.rec
	sc.rec++
	g := sc.r.t.g
	a, b := sc.actIdx[src], sc.actIdx[dst]
	m := len(sc.active)
	switch {
	case a < 0 || b < 0:
		sc.addViolation(Violation{"not-active", src, dst, fmt.Sprintf("route %s → %s joins a node that is not active", g.NodeName(src), g.NodeName(dst)), rec + 1})
		return
	case a == b:
		sc.addViolation(Violation{"arrival", src, dst, fmt.Sprintf("route from %s to itself", g.NodeName(src)), rec + 1})
		return
	}
	bit := int(a)*m + int(b)
	if sc.seen[bit>>6]&(1<<(uint(bit)&63)) != 0 {
		sc.addViolation(Violation{"duplicate", src, dst, fmt.Sprintf("second route %s → %s", g.NodeName(src), g.NodeName(dst)), rec + 1})
		return
	}
	sc.seen[bit>>6] |= 1 << (uint(bit) & 63)
	if sc.cur == nil {
		c := <-sc.free
		c.rec, c.src, c.dst, c.end, c.dirs = c.rec[:0], c.src[:0], c.dst[:0], c.end[:0], c.dirs[:0]
		sc.cur = c
	}
	c := sc.cur
	c.rec = append(c.rec, int32(rec))
	c.src = append(c.src, int32(src))
	c.dst = append(c.dst, int32(dst))
	c.dirs = append(c.dirs, dirs...)
	c.end = append(c.end, int32(len(c.dirs)))
	if len(c.src) >= routeBatchSize {
		sc.flush()
	}
}

func (sc *streamCheck) flush() {
	if sc.cur != nil && len(sc.cur.src) > 0 {
		sc.work <- sc.cur
		sc.cur = nil
	}
}

// finish waits for the workers and returns the report with the missing
// pairs, the figures over C(M_{a,t}) and the deadlock verdict.
func (sc *streamCheck) finish() *Report {
	sc.flush()
	close(sc.work)
	sc.wg.Wait()
	rep := sc.rc.report(sc.ws)
	rep.Routes = sc.rec
	rep.Violations = append(sc.viol, rep.Violations...)
	slices.SortStableFunc(rep.Violations, func(a, b Violation) int { return a.Record - b.Record })
	g := sc.r.t.g
	m := len(sc.active)
	for a := 0; a < m && len(rep.Violations) < maxViolations; a++ {
		for b := 0; b < m && len(rep.Violations) < maxViolations; b++ {
			bit := a*m + b
			if a != b && sc.seen[bit>>6]&(1<<(uint(bit)&63)) == 0 {
				rep.Violations = append(rep.Violations, Violation{"missing", sc.active[a], sc.active[b], fmt.Sprintf("no route %s → %s", g.NodeName(sc.active[a]), g.NodeName(sc.active[b])), 0})
			}
		}
	}
	for _, v := range sc.active {
		if g.NodeFailed(v) {
			rep.Violations = append(rep.Violations, Violation{"failed-link", v, -1, fmt.Sprintf("active node %s is failed", g.NodeName(v)), 0})
		}
	}
	if len(rep.Violations) > maxViolations {
		rep.Violations = rep.Violations[:maxViolations]
	}
	return rep
}

// abort stops the workers after a structural error.
func (sc *streamCheck) abort() {
	sc.cur = nil
	close(sc.work)
	sc.wg.Wait()
}

// claims are the figures a file states about its table.
type claims struct {
	stats        *Figures
	deadlockFree bool
	routes       int // −1 if unknown
}

// conclude computes π_perfect from the minimal lengths (when the set is
// reachable) and compares the file's claims with the recomputed figures.
func (r *Router) conclude(rep *Report, active, transit []int, cl claims, workers int) {
	minSum := rep.SumLength
	if ok, _, err := r.ReachableFirst(active, transit); err == nil && ok && len(active) > 1 {
		if s, err := r.minimalSum(active, transit, workers); err == nil {
			minSum = s
		}
	}
	rep.Figures.PiPerfect, rep.Figures.BalanceFactor = piFigures(minSum, rep.Channels, rep.Figures.PiMax)
	if cl.stats != nil && !statsClose(*cl.stats, rep.Figures) {
		rep.Violations = append(rep.Violations, Violation{"stats", -1, -1, fmt.Sprintf("the file claims %v; the routes give %v", *cl.stats, rep.Figures), 0})
	}
	if rep.Cycle != nil {
		rep.Violations = append(rep.Violations, Violation{"deadlock", -1, -1, "channel dependency cycle with a turn: " + r.CycleString(rep.Cycle), 0})
	} else if !cl.deadlockFree && rep.Routes > 0 {
		rep.Violations = append(rep.Violations, Violation{"stats", -1, -1, "the file says deadlock_free is false, but the dependencies have no cycle with a turn", 0})
	}
	if cl.routes >= 0 && cl.routes != rep.Routes {
		rep.Violations = append(rep.Violations, Violation{"stats", -1, -1, fmt.Sprintf("the file claims %d routes and holds %d", cl.routes, rep.Routes), 0})
	}
}

// TableReader is a table file opened by OpenTable: its header has been
// read, its routes are read as Verify checks them.
type TableReader struct {
	r    *Router
	own  bool // no extra failures: the file's figures describe r's fabric
	used bool
	// a compact file: the reader after the header, the header and the set
	c       *crcReader
	ch      *RoutesHeader
	active  []int
	transit []int
	// a JSON file: its start, the header and where "routes" begins
	f        io.ReadSeeker
	start    int64
	jh       *jsonHeader
	routesAt int64
}

// OpenTable reads the header of a table file in either format, detected
// by content (a compact route file starts with RoutesMagic, a JSON table
// with '{'), and returns it with the router of the network and rule it
// names, with the failures it names plus extraLinks and extraNodes (lists
// as topology.Graph.ApplyFaults accepts). Verify, with that router, then
// streams its routes: memory stays bounded by the set, not by the number
// of routes. JSON tables whose "routes" come before the set are read
// twice (f must be seekable from its current position). A file that is
// not a table is an error, a bad compact header a *RecordError.
func OpenTable(f io.ReadSeeker, extraLinks, extraNodes string) (*TableReader, *Router, error) {
	start, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(f, 1<<16)
	first, err := firstByte(br)
	if err != nil {
		return nil, nil, fmt.Errorf("table file: empty or unreadable (%v)", err)
	}
	own := extraLinks == "" && extraNodes == ""
	switch first {
	case '#':
		return openCompact(br, extraLinks, extraNodes, own)
	case '{':
		return openJSONStream(f, start, extraLinks, extraNodes, own)
	}
	return nil, nil, fmt.Errorf("table file: neither a JSON table nor a compact route file (first byte %q)", first)
}

func firstByte(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.Peek(1)
		if err != nil {
			return 0, err
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			br.ReadByte()
			continue
		}
		return b[0], nil
	}
}

// openCompact reads the header of a compact route file.
func openCompact(br *bufio.Reader, extraLinks, extraNodes string, own bool) (*TableReader, *Router, error) {
	c := &crcReader{br: br}
	h, active, transit, err := readRoutesHeader(c)
	if err != nil {
		if strings.HasPrefix(err.Error(), "not a compact") {
			return nil, nil, fmt.Errorf("table file: %v", err)
		}
		return nil, nil, &RecordError{Record: 0, What: "header", Msg: err.Error()}
	}
	r, err := routerForFile(h.Dims, h.Mesh, h.Rules, h.Order, h.FailedLinks, h.FailedNodes, extraLinks, extraNodes)
	if err != nil {
		return nil, nil, err
	}
	if err := r.checkSet(active, transit); err != nil {
		return nil, nil, err
	}
	return &TableReader{r: r, own: own, c: c, ch: h, active: active, transit: transit}, r, nil
}

// verifyOn implements Verifiable: the routes stream from the file.
func (tr *TableReader) verifyOn(ctx context.Context, r *Router, o VerifyOptions) (*Report, error) {
	switch {
	case r != tr.r:
		return nil, errors.New("routing: a TableReader is verified with the router OpenTable returned")
	case tr.used:
		return nil, errors.New("routing: a TableReader is verified once")
	}
	tr.used = true
	if tr.jh != nil {
		return r.checkJSONRoutes(ctx, tr.jh, tr.jsonRoutes, o.Workers, tr.own)
	}
	active, transit := tr.active, tr.transit
	h := tr.ch
	cl := claims{deadlockFree: h.DeadlockFree, routes: int(h.Routes)}
	if tr.own {
		// with failures of the check's own, the figures differ without
		// any route being wrong
		cl.stats = h.Figures
	}
	return r.streamVerify(active, transit, o.Workers, cl, func(emit func(src, dst int, dirs []Dir)) error {
		return readRoutesRecords(ctx, tr.c, len(active), r.t.nd, func(a, b int, dirs []Dir) { emit(active[a], active[b], dirs) })
	})
}

// streamVerify checks the routes feed hands to emit (node ids; an error
// of feed ends the check and is returned) over active ∪ transit, then
// compares the figures and the deadlock verdict with the claims.
func (r *Router) streamVerify(active, transit []int, workers int, cl claims, feed func(emit func(src, dst int, dirs []Dir)) error) (*Report, error) {
	sc := r.newStreamCheck(active, transit, workers)
	if err := feed(sc.emit); err != nil {
		sc.abort()
		return nil, err
	}
	rep := sc.finish()
	r.conclude(rep, active, transit, cl, workers)
	return rep, nil
}

// dirIn returns an error unless d is a direction of r's torus.
func (r *Router) dirIn(d Dir) error {
	if n := len(r.t.dims); d.Dim() >= n {
		return fmt.Errorf("%s is not a direction of a %d-dimensional torus", d, n)
	}
	return nil
}

// checkSet rejects a set with a node listed twice or both active and
// transit.
func (r *Router) checkSet(active, transit []int) error {
	seen := make([]bool, r.t.nodes)
	for k, list := range [2][]int{active, transit} {
		for _, v := range list {
			if seen[v] {
				if k == 1 {
					return fmt.Errorf("table file: transit node %s is also listed as active or twice", r.t.name(v))
				}
				return fmt.Errorf("table file: active node %s listed twice", r.t.name(v))
			}
			seen[v] = true
		}
	}
	return nil
}

// NewRouter makes the router of the network and rule the table names,
// with the failures it names plus extraLinks and extraNodes (lists as
// topology.Graph.ApplyFaults accepts), for Verify.
func (tf *TableJSON) NewRouter(extraLinks, extraNodes string) (*Router, error) {
	return routerForFile(tf.Dims, tf.Mesh, tf.Rules, tf.Order, tf.FailedLinks, tf.FailedNodes, extraLinks, extraNodes)
}

// verifyOn implements Verifiable: the table must name r's torus and
// rule (r's failures are the ones that count), and its claims are
// compared. A service that keeps one router per fabric state re-checks
// stored tables after failures this way.
func (tf *TableJSON) verifyOn(ctx context.Context, r *Router, o VerifyOptions) (*Report, error) {
	if err := tf.onRouter(r); err != nil {
		return nil, err
	}
	hdr := &jsonHeader{TableJSON: *tf}
	each := func(f func(i int, rt *RouteJSON) error) error {
		for i := range tf.Routes {
			if err := f(i, &tf.Routes[i]); err != nil {
				return err
			}
		}
		return nil
	}
	return r.checkJSONRoutes(ctx, hdr, each, o.Workers, true)
}

// onRouter reports whether the table names r's torus, mesh dimensions and
// rule.
func (tf *TableJSON) onRouter(r *Router) error {
	if !slices.Equal(tf.Dims, r.t.dims) {
		return fmt.Errorf("table file: dims %v do not match the torus %v", tf.Dims, r.t.dims)
	}
	if wrap, err := meshFlags(tf.Mesh, len(tf.Dims)); err != nil {
		return fmt.Errorf("table file: %v", err)
	} else if !slices.Equal(wrap, r.t.wrap) {
		return fmt.Errorf("table file: mesh dimensions [%s] do not match the torus's [%s]", topology.MeshLetters(wrap), topology.MeshLetters(r.t.wrap))
	}
	rule, err := ParseRule(tf.Rules)
	if err != nil {
		return fmt.Errorf("table file: %v", err)
	}
	if len(tf.Order) > 0 {
		if rule.Order, err = ParseOrder(strings.Join(tf.Order, ","), len(tf.Dims)); err != nil {
			return fmt.Errorf("table file: %v", err)
		}
	}
	if rule.String() != r.rule.String() {
		return fmt.Errorf("table file: rule %s differs from the router's %s", rule, r.rule)
	}
	return nil
}

// StoredTable is a table whose routes are kept in the stored form: its
// header (a TableJSON whose routes are not used; it must list its active
// nodes) and its routes as EncodeStoredRoutes wrote them. Verify checks it
// as the TableJSON with those routes, without making them (72 bytes a
// route): memory stays bounded by the set.
type StoredTable struct {
	Header *TableJSON
	Routes []byte
}

// verifyOn implements Verifiable.
func (st StoredTable) verifyOn(ctx context.Context, r *Router, o VerifyOptions) (*Report, error) {
	tf := st.Header
	if err := tf.onRouter(r); err != nil {
		return nil, err
	}
	if len(tf.Active) == 0 {
		return nil, errors.New("stored table: no active nodes listed")
	}
	active, transit, err := r.jsonSet(&jsonHeader{TableJSON: *tf}, nil)
	if err != nil {
		return nil, err
	}
	ids := make([]int, len(tf.Active))
	for i, c := range tf.Active {
		ids[i] = r.t.g.NodeAt(c)
	}
	cl := claims{stats: tf.Figures, deadlockFree: tf.DeadlockFree, routes: -1}
	return r.streamVerify(active, transit, o.Workers, cl, func(emit func(src, dst int, dirs []Dir)) error {
		var dirs []Dir
		var stop error
		k := 0
		err := EachStoredRoute(st.Routes, tf, func(int) {}, func(src, dst int, runs []byte) {
			if stop != nil {
				return
			}
			if k++; k%routeBatchSize == 0 && ctx.Err() != nil {
				stop = context.Cause(ctx)
				return
			}
			dirs = AppendRunDirs(dirs[:0], runs)
			for _, d := range dirs {
				if err := r.dirIn(d); err != nil {
					stop = routeErr(k-1, err)
					return
				}
			}
			emit(ids[src], ids[dst], dirs)
		})
		if err != nil {
			return err
		}
		return stop
	})
}

// jsonHeader is a JSON table without its routes.
type jsonHeader struct {
	TableJSON
}

// checkJSONRoutes checks the routes each yields (in file order) against
// the set named in h (or, without "active", the route endpoints, which
// takes a first pass); it stops with ctx's error when ctx ends.
//
// ownFabric says the router's fabric is the one the file describes (no
// failures added by the check), so the file's figures are compared.
func (r *Router) checkJSONRoutes(ctx context.Context, h *jsonHeader, each func(func(i int, rt *RouteJSON) error) error, workers int, ownFabric bool) (*Report, error) {
	active, transit, err := r.jsonSet(h, each)
	if err != nil {
		return nil, err
	}
	cl := claims{stats: h.Figures, deadlockFree: h.DeadlockFree, routes: -1}
	if !ownFabric {
		cl.stats = nil
	}
	return r.streamVerify(active, transit, workers, cl, func(emit func(src, dst int, dirs []Dir)) error {
		var dirs []Dir
		return each(func(i int, rt *RouteJSON) error {
			if i%routeBatchSize == 0 && ctx.Err() != nil {
				return context.Cause(ctx)
			}
			src, err := r.coordNode("source", rt.Src)
			if err != nil {
				return routeErr(i, err)
			}
			dst, err := r.coordNode("destination", rt.Dst)
			if err != nil {
				return routeErr(i, err)
			}
			dirs = dirs[:0]
			for _, s := range rt.Dirs {
				d, err := ParseDir(s)
				if err == nil {
					err = r.dirIn(d)
				}
				if err != nil {
					return routeErr(i, err)
				}
				dirs = append(dirs, d)
			}
			emit(src, dst, dirs)
			return nil
		})
	})
}

func routeErr(i int, err error) error {
	return &RecordError{Record: i + 1, What: "route", Msg: err.Error()}
}

// coordNode returns the node at coordinates c, or an error naming what.
func (r *Router) coordNode(what string, c []int) (int, error) {
	n := len(r.t.dims)
	if len(c) != n {
		return -1, fmt.Errorf("%s %v has %d coordinates, the torus has %d dimensions", what, c, len(c), n)
	}
	for i, x := range c {
		if x < 0 || x >= r.t.dims[i] {
			return -1, fmt.Errorf("%s %v is outside the torus", what, c)
		}
	}
	return r.t.g.NodeAt(c), nil
}

// jsonSet returns the active (sorted) and transit nodes of a JSON table:
// its "active" list, or without one the route endpoints.
func (r *Router) jsonSet(h *jsonHeader, each func(func(i int, rt *RouteJSON) error) error) (active, transit []int, err error) {
	g := r.t.g
	inSet := make([]bool, g.NumNodes())
	if len(h.Active) > 0 {
		for _, c := range h.Active {
			v, err := r.coordNode("table file: active node", c)
			if err != nil {
				return nil, nil, err
			}
			if inSet[v] {
				return nil, nil, fmt.Errorf("table file: active node %s listed twice", g.NodeName(v))
			}
			inSet[v] = true
			active = append(active, v)
		}
	} else {
		err := each(func(i int, rt *RouteJSON) error {
			for _, c := range [][]int{rt.Src, rt.Dst} {
				v, err := r.coordNode("endpoint", c)
				if err != nil {
					return routeErr(i, err)
				}
				if !inSet[v] {
					inSet[v] = true
					active = append(active, v)
				}
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	slices.Sort(active)
	for _, c := range h.Transit {
		v, err := r.coordNode("table file: transit node", c)
		if err != nil {
			return nil, nil, err
		}
		if inSet[v] {
			return nil, nil, fmt.Errorf("table file: transit node %s is also listed as active or twice", g.NodeName(v))
		}
		inSet[v] = true
		transit = append(transit, v)
	}
	return active, transit, nil
}
