package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/icn-hpc/icn/routing"
)

// A job's routes are stored apart from its record, in the tables bucket,
// in a binary form about twenty times smaller than their JSON:
//
//	uvarint n                      routes
//	n times:
//	    varint  source − previous source     (indices into the table's
//	    varint  destination − previous dest.  active list)
//	    uvarint r, r run bytes: high nibble the direction (2·dim, +1 if
//	            negative), low nibble the repeat count − 1
//
// The record keeps the table's header (nodes, rule, figures); Job reads
// both back into one routing.TableJSON.

var dirNames = func() (names [2 * routing.MaxDims]string) {
	for d := range names {
		names[d] = routing.Dir(d).String()
	}
	return names
}()

// EncodeRoutes encodes tf's routes (sources and destinations must be
// active nodes of tf).
func EncodeRoutes(tf *routing.TableJSON) ([]byte, error) {
	index := make(map[int]int, len(tf.Active))
	for i, c := range tf.Active {
		index[CoordID(c, tf.Dims)] = i
	}
	dir := make(map[string]routing.Dir, len(dirNames))
	for d, s := range dirNames {
		dir[s] = routing.Dir(d)
	}
	b := binary.AppendUvarint(make([]byte, 0, 6*len(tf.Routes)+16), uint64(len(tf.Routes)))
	prevSrc, prevDst := 0, 0
	var dirs []routing.Dir
	for i := range tf.Routes {
		r := &tf.Routes[i]
		src, ok1 := index[CoordID(r.Src, tf.Dims)]
		dst, ok2 := index[CoordID(r.Dst, tf.Dims)]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("route %d joins nodes that are not the table's active nodes", i)
		}
		dirs = dirs[:0]
		for _, name := range r.Dirs {
			d, ok := dir[name]
			if !ok {
				return nil, fmt.Errorf("route %d: step %q", i, name)
			}
			dirs = append(dirs, d)
		}
		var err error
		if b, err = appendRoute(b, i, src-prevSrc, dst-prevDst, dirs); err != nil {
			return nil, err
		}
		prevSrc, prevDst = src, dst
	}
	return b, nil
}

// appendRoute appends route i: its source and destination as differences
// from the previous route's, and its steps as routing.AppendRuns writes
// them (a route of 128 runs or more is refused: its count would not be
// one byte).
func appendRoute(b []byte, i, dSrc, dDst int, dirs []routing.Dir) ([]byte, error) {
	b = binary.AppendVarint(b, int64(dSrc))
	b = binary.AppendVarint(b, int64(dDst))
	at := len(b)
	b = routing.AppendRuns(b, dirs)
	if b[at] >= 128 {
		return nil, fmt.Errorf("route %d has %d runs of steps", i, len(b)-at-2)
	}
	return b, nil
}

// EncodeTableRoutes encodes the routes of tb as EncodeRoutes encodes
// those of tb in the file format (routes by source, then destination, in
// tb.Active's order, which the file's active list keeps), straight from
// tb, without making the routes of the file format (72 bytes each; a
// 16 384-node table has 268 million routes). It stops with ctx's error
// when ctx ends.
func EncodeTableRoutes(ctx context.Context, tb *routing.Table) ([]byte, error) {
	n, m := tb.NumRoutes(), len(tb.Active)
	b := binary.AppendUvarint(make([]byte, 0, 6*n+16), uint64(n))
	prevSrc, prevDst := 0, 0
	var dirs []routing.Dir
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
			if int(d) >= len(dirNames) {
				return nil, fmt.Errorf("route %d: step %v", i, d)
			}
		}
		var err error
		if b, err = appendRoute(b, i, src-prevSrc, dst-prevDst, dirs); err != nil {
			return nil, err
		}
		prevSrc, prevDst = src, dst
	}
	return b, nil
}

// DecodeRoutes reads routes that EncodeRoutes wrote for a table with
// tf's active nodes into tf.Routes; coordinates and step lists are
// shared between routes.
func DecodeRoutes(b []byte, tf *routing.TableJSON) error {
	var routes []routing.RouteJSON
	// Step lists shared by their run bytes: up to 7 run bytes (most
	// routes) packed with their count into one word, longer ones by
	// string.
	short := map[uint64][]string{}
	shared := map[string][]string{}
	err := walkRoutes(b, len(tf.Active), func(n int) { routes = make([]routing.RouteJSON, 0, n) }, func(src, dst int, runs []byte) {
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
			for _, x := range runs {
				for range int(x&15) + 1 {
					l = append(l, dirNames[x>>4])
				}
			}
			if l == nil {
				l = []string{}
			}
			if len(runs) <= 7 {
				short[key] = l
			} else {
				shared[string(runs)] = l
			}
		}
		routes = append(routes, routing.RouteJSON{Src: tf.Active[src], Dst: tf.Active[dst], Dirs: l})
	})
	if err != nil {
		return err
	}
	tf.Routes = routes
	return nil
}

// CheckRoutes checks routes that EncodeRoutes wrote for a table of
// active nodes as DecodeRoutes does, without decoding them (the whole
// file check of a store whose jobs hold millions of routes).
func CheckRoutes(b []byte, active int) error {
	return walkRoutes(b, active, func(int) {}, func(int, int, []byte) {})
}

// walkRoutes checks the encoded routes b of a table of active nodes and
// calls start with their count, then route with each route's source and
// destination (indices into the active nodes) and run bytes (valid
// directions).
func walkRoutes(b []byte, active int, start func(n int), route func(src, dst int, runs []byte)) error {
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
		b = b[k1+k2:]
		if len(b) == 0 || int(b[0])+1 > len(b) {
			return bad(fmt.Sprintf("route %d steps", i))
		}
		runs := b[1 : 1+int(b[0])]
		b = b[1+int(b[0]):]
		for _, x := range runs {
			if d := int(x >> 4); d >= len(dirNames) {
				return bad(fmt.Sprintf("route %d: direction %d", i, d))
			}
		}
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

var errNoRoutes = errors.New("its routes are missing from the tables bucket")
