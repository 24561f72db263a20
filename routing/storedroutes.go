package routing

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
)

// The stored form of a table's routes, as the fabric manager's store keeps
// them (apart from the table's header). Three versions are read; the
// second is written whenever the routes are every ordered pair of the
// table's active nodes in the table's order (by source, then destination,
// in the active list's order: every table icn builds).
//
// Version 1, about seven bytes a route:
//
//	uvarint n                      routes
//	n times:
//	    varint  source − previous source     (indices into the table's
//	    varint  destination − previous dest.  active list)
//	    the steps as AppendRuns writes them (uvarint r, r run
//	            bytes: high nibble the direction, 2·dim, +1 if negative,
//	            low nibble the repeat count − 1), read with
//	            CutRuns
//
// Version 2, a fraction of a byte a route: a route is "predicted" when its
// steps are those of the last route before it whose destination lies at
// the same offset from its source (the difference of their coordinates,
// dimension by dimension); on a torus without failures most routes of a
// set are translates of one another and so are predicted. Only the others
// are written out:
//
//	0x80 0x00 0x02                 (a version 1 value never begins with
//	                               0x80 0x00: its count is a uvarint of
//	                               the fewest bytes)
//	uvarint n                      routes: n = m·(m−1) for m active nodes
//	until n routes are read:
//	    uvarint k                  k predicted routes
//	    unless n routes are read:  one route's steps (AppendRuns)
//
// Reading version 2 needs the table's dimensions and the active nodes'
// coordinates (TableJSON's header): the offsets are computed from them.
//
// Version 3 (storedpatch.go), a version 2 value with some of its routes
// replaced, is written by a repair after a failure (RepairStored).

// maxStoredDirs is the number of directions a stored step may take.
const maxStoredDirs = 2 * MaxDims

// storedV2 is the first bytes of a value of version 2, its first two
// those of a version after 1.
var storedV2 = [3]byte{0x80, 0x00, 0x02}

// StoredRoutesVersion returns the version of the stored form b is written
// in: 3 when it begins as version 3 does, 2 when it begins as another
// version after 1 does (its readers refuse a later one), else 1.
func StoredRoutesVersion(b []byte) int {
	if len(b) >= 2 && b[0] == storedV2[0] && b[1] == storedV2[1] {
		if len(b) >= 3 && b[2] == storedV3[2] {
			return 3
		}
		return 2
	}
	return 1
}

// EncodeStoredRoutes encodes tf's routes (sources and destinations must be
// active nodes of tf): version 2 when they are every ordered pair of its
// active nodes in the table's order, else version 1.
func EncodeStoredRoutes(tf *TableJSON) ([]byte, error) {
	index := make(map[int]int, len(tf.Active))
	for i, c := range tf.Active {
		index[CoordID(c, tf.Dims)] = i
	}
	n, m := len(tf.Routes), len(tf.Active)
	pairs := make([][2]int32, n)
	ordered := m > 1 && n == m*(m-1)
	for i := range tf.Routes {
		r := &tf.Routes[i]
		src, ok1 := index[CoordID(r.Src, tf.Dims)]
		dst, ok2 := index[CoordID(r.Dst, tf.Dims)]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("route %d joins nodes that are not the table's active nodes", i)
		}
		pairs[i] = [2]int32{int32(src), int32(dst)}
		if ordered {
			s, d := pairOf(i, m)
			ordered = s == src && d == dst
		}
	}
	var dirs []Dir
	dirsOf := func(i int) ([]Dir, error) {
		var err error
		if dirs, err = AppendNamedDirs(dirs[:0], tf.Routes[i].Dirs); err != nil {
			return nil, fmt.Errorf("route %d: %v", i, err)
		}
		return dirs, nil
	}
	if ordered {
		return encodeStoredV2(context.Background(), tf.Dims, tf.Active, dirsOf)
	}
	b := binary.AppendUvarint(make([]byte, 0, 6*n+16), uint64(n))
	prevSrc, prevDst := 0, 0
	for i := range tf.Routes {
		dirs, err := dirsOf(i)
		if err != nil {
			return nil, err
		}
		src, dst := int(pairs[i][0]), int(pairs[i][1])
		b = binary.AppendVarint(b, int64(src-prevSrc))
		b = binary.AppendVarint(b, int64(dst-prevDst))
		if b, err = appendStoredRuns(b, i, dirs); err != nil {
			return nil, err
		}
		prevSrc, prevDst = src, dst
	}
	return b, nil
}

// pairOf returns the source and destination indices of route i of a
// table of m active nodes (Table.Pair's order).
func pairOf(i, m int) (src, dst int) {
	src, dst = i/(m-1), i%(m-1)
	if dst >= src {
		dst++
	}
	return src, dst
}

// appendStoredRuns appends route i's steps as AppendRuns writes them. A
// route of 128 runs or more (more than the one byte of its count and 127
// run bytes) is refused: the store's readers before CutRuns read the
// count as one byte.
func appendStoredRuns(b []byte, i int, dirs []Dir) ([]byte, error) {
	for _, d := range dirs {
		if d >= maxStoredDirs {
			return nil, fmt.Errorf("route %d: step %v", i, d)
		}
	}
	at := len(b)
	b = AppendRuns(b, dirs)
	if len(b)-at > 128 {
		return nil, fmt.Errorf("route %d has %d runs of steps", i, len(b)-at-2)
	}
	return b, nil
}

// EncodeStoredTable encodes the routes of tb as EncodeStoredRoutes encodes
// those of tb in the file format (version 2: routes by source, then
// destination, in tb.Active's order, which the file's active list keeps),
// straight from tb, without making the routes of the file format (72
// bytes each; a 16 384-node table has 268 million routes). It stops with
// ctx's error when ctx ends.
func EncodeStoredTable(ctx context.Context, tb *Table) ([]byte, error) {
	g := tb.Graph()
	active := make([][]int, len(tb.Active))
	for i, v := range tb.Active {
		active[i] = g.Coord(v)
	}
	var dirs []Dir
	return encodeStoredV2(ctx, g.Dims(), active, func(i int) ([]Dir, error) {
		dirs = tb.AppendDirs(i, dirs[:0])
		return dirs, nil
	})
}

// encodeStoredV2 writes version 2 of the m·(m−1) routes between the
// active nodes (coordinates in dims), route i's steps given by dirsOf
// (valid until the next call); an empty table is written as version 1.
func encodeStoredV2(ctx context.Context, dims []int, active [][]int, dirsOf func(i int) ([]Dir, error)) ([]byte, error) {
	if len(active) < 2 {
		return binary.AppendUvarint(nil, 0), nil
	}
	w, err := newStoredWriter(dims, active)
	if err != nil {
		return nil, err
	}
	var rec []byte
	for i := range w.n {
		if i&0xffff == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		dirs, err := dirsOf(i)
		if err != nil {
			return nil, err
		}
		if rec, err = appendStoredRuns(rec[:0], i, dirs); err != nil {
			return nil, err
		}
		w.add(rec)
	}
	return w.finish(), nil
}

// storedWriter writes version 2, route by route in the table's order.
type storedWriter struct {
	b         []byte
	off       *offsets
	last      *lastRuns
	m, n, i   int
	predicted uint64
}

func newStoredWriter(dims []int, active [][]int) (*storedWriter, error) {
	off, err := newOffsets(dims, active)
	if err != nil {
		return nil, err
	}
	m := len(active)
	w := &storedWriter{off: off, m: m, n: m * (m - 1)}
	w.b = binary.AppendUvarint(append(make([]byte, 0, 1<<12), storedV2[:]...), uint64(w.n))
	w.last = off.table(w.n)
	return w, nil
}

// add writes the next route, its steps as AppendRuns wrote them (rec).
func (w *storedWriter) add(rec []byte) {
	src, dst := pairOf(w.i, w.m)
	w.i++
	k := w.off.key(src, dst)
	if at, l, ok := w.last.get(k); ok && string(w.b[at:at+l]) == string(rec) {
		w.predicted++
		return
	}
	w.b = binary.AppendUvarint(w.b, w.predicted)
	w.predicted = 0
	w.last.set(k, len(w.b), len(rec))
	w.b = append(w.b, rec...)
}

// finish returns the value written (every route added).
func (w *storedWriter) finish() []byte {
	if w.predicted > 0 {
		w.b = binary.AppendUvarint(w.b, w.predicted)
	}
	return slices.Clip(w.b)
}

// RecodeStoredRoutes returns routes stored for a table with tf's header
// written in the given version of the stored form (1 or 2; version 3,
// which only a repair writes, is read): b itself when it is in that
// version already, or when version 2 is asked for routes that are not
// every ordered pair of the active nodes in the table's order. Damaged
// routes are an error.
func RecodeStoredRoutes(b []byte, tf *TableJSON, version int) ([]byte, error) {
	switch {
	case version != 1 && version != 2:
		return nil, fmt.Errorf("stored routes have no version %d", version)
	case StoredRoutesVersion(b) == version || len(tf.Active) < 2:
		return b, CheckStoredRoutes(b, tf)
	case version == 1:
		return storedV1(b, tf)
	}
	m := len(tf.Active)
	w, err := newStoredWriter(tf.Dims, tf.Active)
	if err != nil {
		return nil, fmt.Errorf("stored routes damaged: %v", err)
	}
	ordered := true
	var rec []byte
	err = EachStoredRoute(b, tf, func(n int) { ordered = n == w.n }, func(src, dst int, runs []byte) {
		if !ordered {
			return
		}
		if s, d := pairOf(w.i, m); s != src || d != dst {
			ordered = false
			return
		}
		rec = append(binary.AppendUvarint(rec[:0], uint64(len(runs))), runs...)
		w.add(rec)
	})
	if err != nil || !ordered {
		return b, err
	}
	return w.finish(), nil
}

// storedV1 writes routes stored in version 2 in version 1.
func storedV1(b []byte, tf *TableJSON) ([]byte, error) {
	var out []byte
	prevSrc, prevDst := 0, 0
	err := EachStoredRoute(b, tf, func(n int) {
		out = binary.AppendUvarint(make([]byte, 0, 6*n+16), uint64(n))
	}, func(src, dst int, runs []byte) {
		out = binary.AppendVarint(out, int64(src-prevSrc))
		out = binary.AppendVarint(out, int64(dst-prevDst))
		out = append(binary.AppendUvarint(out, uint64(len(runs))), runs...)
		prevSrc, prevDst = src, dst
	})
	return out, err
}

// offsets names the offset between two active nodes (their coordinates'
// differences, each in −(d−1) … d−1) by a number below size.
type offsets struct {
	nd     int
	coord  []int32 // active node i's coordinates from nd·i
	weight [MaxDims]int64
	bias   int64 // makes every key ≥ 0
	size   int64
}

func newOffsets(dims []int, active [][]int) (*offsets, error) {
	nd := len(dims)
	if nd == 0 || nd > MaxDims {
		return nil, fmt.Errorf("stored routes of a %d-dimensional torus", nd)
	}
	o := &offsets{nd: nd, coord: make([]int32, 0, nd*len(active)), size: 1}
	for i := nd - 1; i >= 0; i-- {
		if dims[i] < 1 || dims[i] > 1<<16 {
			return nil, fmt.Errorf("stored routes of a torus with a dimension of %d nodes", dims[i])
		}
		o.weight[i] = o.size
		o.size *= int64(2*dims[i] - 1)
		o.bias += o.weight[i] * int64(dims[i]-1)
	}
	for i, c := range active {
		if CoordID(c, dims) < 0 {
			return nil, fmt.Errorf("active node %d at %v is not a node of %v", i, c, dims)
		}
		for _, x := range c {
			o.coord = append(o.coord, int32(x))
		}
	}
	return o, nil
}

// key names the offset from active node src to active node dst.
func (o *offsets) key(src, dst int) int64 {
	a, b := o.coord[o.nd*src:o.nd*src+o.nd], o.coord[o.nd*dst:o.nd*dst+o.nd]
	k := o.bias
	for i := range a {
		k += o.weight[i] * int64(b[i]-a[i])
	}
	return k
}

// lastRuns is, for each offset, where the last route of that offset
// has its steps: dense when the offsets are few for the routes, else a
// map.
type lastRuns struct {
	dense  []uint64 // (position+1)<<16 | length; 0: none yet
	sparse map[int64]uint64
}

// table returns an empty lastRuns for n routes.
func (o *offsets) table(n int) *lastRuns {
	if o.size <= max(4*int64(n), 1<<16) && o.size <= 1<<24 {
		return &lastRuns{dense: make([]uint64, o.size)}
	}
	return &lastRuns{sparse: map[int64]uint64{}}
}

func (t *lastRuns) get(k int64) (at, l int, ok bool) {
	var e uint64
	if t.dense != nil {
		e = t.dense[k]
	} else {
		e = t.sparse[k]
	}
	return int(e>>16) - 1, int(e & 0xffff), e != 0
}

func (t *lastRuns) set(k int64, at, l int) {
	e := uint64(at+1)<<16 | uint64(l)
	if t.dense != nil {
		t.dense[k] = e
	} else {
		t.sparse[k] = e
	}
}

// DecodeStoredRoutes reads routes that EncodeStoredRoutes wrote for a
// table with tf's header (dimensions, active nodes) into tf.Routes;
// coordinates and step lists are shared between routes.
func DecodeStoredRoutes(b []byte, tf *TableJSON) error {
	var routes []RouteJSON
	// Step lists shared by their run bytes: up to 7 run bytes (most
	// routes) packed with their count into one word, longer ones by
	// string.
	short := map[uint64][]string{}
	shared := map[string][]string{}
	err := EachStoredRoute(b, tf, func(n int) { routes = make([]RouteJSON, 0, n) }, func(src, dst int, runs []byte) {
		var l []string
		var ok bool
		key := uint64(len(runs)) << 56
		if len(runs) <= 7 {
			for k, x := range runs {
				key |= uint64(x) << (8 * k)
			}
			l, ok = short[key]
		} else {
			l, ok = shared[string(runs)]
		}
		if !ok {
			if l = AppendRunNames(nil, runs); l == nil {
				l = []string{}
			}
			if len(runs) <= 7 {
				short[key] = l
			} else {
				shared[string(runs)] = l
			}
		}
		routes = append(routes, RouteJSON{Src: tf.Active[src], Dst: tf.Active[dst], Dirs: l})
	})
	if err != nil {
		return err
	}
	tf.Routes = routes
	return nil
}

// CheckStoredRoutes checks routes that EncodeStoredRoutes wrote for a
// table with tf's header as DecodeStoredRoutes does, without decoding
// them (the whole file check of a store whose jobs hold millions of
// routes).
func CheckStoredRoutes(b []byte, tf *TableJSON) error {
	return EachStoredRoute(b, tf, func(int) {}, func(int, int, []byte) {})
}

// EachStoredRoute reads the routes b that EncodeStoredRoutes wrote for a
// table with tf's header (its routes are not used): it calls start with
// their count, then route with each route's source and destination
// (indices into the active nodes) and run bytes (CutRuns: valid
// directions; RunOf decodes them). It stops at the first damaged route
// with an error naming it.
func EachStoredRoute(b []byte, tf *TableJSON, start func(n int), route func(src, dst int, runs []byte)) error {
	switch StoredRoutesVersion(b) {
	case 3:
		return eachStoredV3(b, tf, start, route)
	case 2:
		if len(b) < 3 || b[2] != storedV2[2] {
			return fmt.Errorf("stored routes damaged: version cut short or not 2")
		}
		return eachStoredV2(b, tf, start, route)
	}
	bad := func(what string) error { return fmt.Errorf("stored routes damaged: %s", what) }
	active := len(tf.Active)
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return bad("route count")
	}
	b = b[k:]
	start(int(n))
	src, dst := 0, 0
	for i := range int(n) {
		ds, k1 := binary.Varint(b)
		if k1 <= 0 {
			return bad("source")
		}
		dd, k2 := binary.Varint(b[k1:])
		if k2 <= 0 {
			return bad("destination")
		}
		src, dst = src+int(ds), dst+int(dd)
		if src < 0 || src >= active || dst < 0 || dst >= active {
			return bad(fmt.Sprintf("route %d joins node indices %d and %d of %d", i, src, dst, active))
		}
		runs, rest, err := CutRuns(b[k1+k2:], maxStoredDirs)
		if err != nil {
			return bad(fmt.Sprintf("route %d steps: %v", i, err))
		}
		b = rest
		route(src, dst, runs)
	}
	if len(b) != 0 {
		return bad(fmt.Sprintf("%d bytes after the last route", len(b)))
	}
	return nil
}

// eachStoredV2 is EachStoredRoute for a value of version 2.
func eachStoredV2(b []byte, tf *TableJSON, start func(n int), route func(src, dst int, runs []byte)) error {
	bad := func(what string) error { return fmt.Errorf("stored routes damaged: %s", what) }
	m := len(tf.Active)
	n, k := binary.Uvarint(b[3:])
	if k <= 0 || m < 2 || n != uint64(m)*uint64(m-1) {
		return bad(fmt.Sprintf("route count %d is not that of a routing table of %d active nodes", n, m))
	}
	off, err := newOffsets(tf.Dims, tf.Active)
	if err != nil {
		return bad(err.Error())
	}
	pos := 3 + k
	last := off.table(int(n))
	start(int(n))
	src, dst := 0, 1
	next := func() { // the next pair in the table's order
		if dst++; dst == src {
			dst++
		}
		if dst == m {
			src, dst = src+1, 0
		}
	}
	for i := 0; i < int(n); {
		p, k := binary.Uvarint(b[pos:])
		if k <= 0 || p > n-uint64(i) {
			return bad(fmt.Sprintf("count of routes predicted after route %d", i))
		}
		pos += k
		for range int(p) {
			at, l, ok := last.get(off.key(src, dst))
			if !ok {
				return bad(fmt.Sprintf("route %d is predicted, but no route before it has its offset", i))
			}
			route(src, dst, b[at:at+l])
			next()
			i++
		}
		if i == int(n) {
			break
		}
		runs, rest, err := CutRuns(b[pos:], maxStoredDirs)
		if err != nil {
			return bad(fmt.Sprintf("route %d steps: %v", i, err))
		}
		at := len(b) - len(rest) - len(runs)
		last.set(off.key(src, dst), at, len(runs))
		route(src, dst, runs)
		pos = len(b) - len(rest)
		next()
		i++
	}
	if pos != len(b) {
		return bad(fmt.Sprintf("%d bytes after the last route", len(b)-pos))
	}
	return nil
}

// CoordID is the mixed-radix id of coordinates c (X fastest); -1 when c
// does not fit dims.
func CoordID(c, dims []int) int {
	if len(c) != len(dims) {
		return -1
	}
	id := 0
	for i := len(dims) - 1; i >= 0; i-- {
		if c[i] < 0 || c[i] >= dims[i] {
			return -1
		}
		id = id*dims[i] + c[i]
	}
	return id
}
