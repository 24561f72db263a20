package routing

import (
	"context"
	"encoding/binary"
	"fmt"
)

// The stored form of a table's routes, as the fabric manager's store keeps
// them (apart from the table's header), about twenty times smaller than
// their JSON:
//
//	uvarint n                      routes
//	n times:
//	    varint  source − previous source     (indices into the table's
//	    varint  destination − previous dest.  active list)
//	    the steps as AppendRuns writes them (uvarint r, r run
//	            bytes: high nibble the direction, 2·dim, +1 if negative,
//	            low nibble the repeat count − 1), read with
//	            CutRuns

// maxStoredDirs is the number of directions a stored step may take.
const maxStoredDirs = 2 * MaxDims

// EncodeStoredRoutes encodes tf's routes (sources and destinations must be
// active nodes of tf).
func EncodeStoredRoutes(tf *TableJSON) ([]byte, error) {
	index := make(map[int]int, len(tf.Active))
	for i, c := range tf.Active {
		index[CoordID(c, tf.Dims)] = i
	}
	b := binary.AppendUvarint(make([]byte, 0, 6*len(tf.Routes)+16), uint64(len(tf.Routes)))
	prevSrc, prevDst := 0, 0
	var dirs []Dir
	for i := range tf.Routes {
		r := &tf.Routes[i]
		src, ok1 := index[CoordID(r.Src, tf.Dims)]
		dst, ok2 := index[CoordID(r.Dst, tf.Dims)]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("route %d joins nodes that are not the table's active nodes", i)
		}
		var err error
		if dirs, err = AppendNamedDirs(dirs[:0], r.Dirs); err != nil {
			return nil, fmt.Errorf("route %d: %v", i, err)
		}
		if b, err = appendStoredRoute(b, i, src-prevSrc, dst-prevDst, dirs); err != nil {
			return nil, err
		}
		prevSrc, prevDst = src, dst
	}
	return b, nil
}

// appendStoredRoute appends route i: its source and destination as differences
// from the previous route's, and its steps as AppendRuns writes
// them. A route of 128 runs or more (more than the one byte of its count
// and 127 run bytes) is refused: the store's readers before CutRuns
// read the count as one byte.
func appendStoredRoute(b []byte, i, dSrc, dDst int, dirs []Dir) ([]byte, error) {
	b = binary.AppendVarint(b, int64(dSrc))
	b = binary.AppendVarint(b, int64(dDst))
	at := len(b)
	b = AppendRuns(b, dirs)
	if len(b)-at > 128 {
		return nil, fmt.Errorf("route %d has %d runs of steps", i, len(b)-at-2)
	}
	return b, nil
}

// EncodeStoredTable encodes the routes of tb as EncodeStoredRoutes encodes
// those of tb in the file format (routes by source, then destination, in
// tb.Active's order, which the file's active list keeps), straight from
// tb, without making the routes of the file format (72 bytes each; a
// 16 384-node table has 268 million routes). It stops with ctx's error
// when ctx ends.
func EncodeStoredTable(ctx context.Context, tb *Table) ([]byte, error) {
	n, m := tb.NumRoutes(), len(tb.Active)
	b := binary.AppendUvarint(make([]byte, 0, 6*n+16), uint64(n))
	prevSrc, prevDst := 0, 0
	var dirs []Dir
	for i := range n {
		if i&0xffff == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		src, dst := i/(m-1), i%(m-1) // tb.Pair's order
		if dst >= src {
			dst++
		}
		dirs = tb.AppendDirs(i, dirs[:0])
		for _, d := range dirs {
			if d >= maxStoredDirs {
				return nil, fmt.Errorf("route %d: step %v", i, d)
			}
		}
		var err error
		if b, err = appendStoredRoute(b, i, src-prevSrc, dst-prevDst, dirs); err != nil {
			return nil, err
		}
		prevSrc, prevDst = src, dst
	}
	return b, nil
}

// DecodeStoredRoutes reads routes that EncodeStoredRoutes wrote for a table with
// tf's active nodes into tf.Routes; coordinates and step lists are
// shared between routes.
func DecodeStoredRoutes(b []byte, tf *TableJSON) error {
	var routes []RouteJSON
	// Step lists shared by their run bytes: up to 7 run bytes (most
	// routes) packed with their count into one word, longer ones by
	// string.
	short := map[uint64][]string{}
	shared := map[string][]string{}
	err := EachStoredRoute(b, len(tf.Active), func(n int) { routes = make([]RouteJSON, 0, n) }, func(src, dst int, runs []byte) {
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

// CheckStoredRoutes checks routes that EncodeStoredRoutes wrote for a table of
// active nodes as DecodeStoredRoutes does, without decoding them (the whole
// file check of a store whose jobs hold millions of routes).
func CheckStoredRoutes(b []byte, active int) error {
	return EachStoredRoute(b, active, func(int) {}, func(int, int, []byte) {})
}

// EachStoredRoute reads the routes b that EncodeStoredRoutes wrote for a table of
// active nodes: it calls start with their count, then route with each
// route's source and destination (indices into the active nodes) and run
// bytes (CutRuns: valid directions; RunOf decodes them).
// It stops at the first damaged route with an error naming it.
func EachStoredRoute(b []byte, active int, start func(n int), route func(src, dst int, runs []byte)) error {
	bad := func(what string) error { return fmt.Errorf("stored routes damaged: %s", what) }
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
