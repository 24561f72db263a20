package store

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A running job's link loads (the links its table's routes cross, in
// ascending order, and how many of its routes cross each) are all a start
// of the service needs of the routes besides keeping them. Counting them
// again from the routes takes most of a start on the largest tori built
// (Sequoia 60 % full: 265 million routes, 11 CPU-s), so they are stored
// beside the routes, tied to them by the routes' checksum:
//
//	version (1 or 2) | CRC-32C of the stored routes (4 bytes, big
//	endian) | uvarint n | n uvarint link ids, each less the one before |
//	n uvarint route counts | version 2: n uvarint counts of those
//	routes that cross the link from its end A to its end B
//
// Version 2 (schema 6) keeps the loads by direction, which a repair of a
// table after a failure needs (its π_max is per channel); a record of
// version 1 is read without them.
//
// framed as every record. PutJob drops them whenever it replaces or
// removes the routes, so stored loads are always those of the stored
// routes: a record tied to other routes is damage (checkRecords). Stores
// before schema 4 have no loads bucket and keep none.
const loadsVersion = 2

// loadsSchema is the first schema with the loads bucket.
const loadsSchema = 4

// Loads are a job's link loads: Routes[i] routes cross link Links[i];
// the links ascending. AB[i] of them cross it from its end A to its end
// B (nil: not known, a record of version 1).
type Loads struct {
	Links, Routes, AB []int32
}

// PutJobLoads stores the link loads of job id's stored routes (a no-op in
// a store before schema 4). The routes must be stored already, in this
// or an earlier transaction.
func (t *Tx) PutJobLoads(id int, l Loads) error {
	if t.schema < loadsSchema {
		return nil
	}
	if t.schema < routesV3Schema {
		l.AB = nil // version 1, which an icn of that schema reads
	}
	key := u64(uint64(id))
	v, err := t.kv.Peek(bTables, key)
	if err != nil {
		return err
	}
	if len(v) < 5 {
		return fmt.Errorf("job %d: %v", id, errNoRoutes)
	}
	b, err := encodeLoads(binary.BigEndian.Uint32(v[1:5]), l)
	if err != nil {
		return fmt.Errorf("job %d: link loads: %v", id, err)
	}
	return t.kv.Put(bLoads, key, frameRecord(b))
}

// dropLoads removes a job's stored link loads (its routes change).
func (t *Tx) dropLoads(key []byte) error {
	if t.schema < loadsSchema {
		return nil
	}
	return t.kv.Delete(bLoads, key)
}

// jobLoads returns the stored link loads of the job stored under key,
// if any and tied to routes of checksum sum; tied reports whether a
// record was there and tied to them.
func (t *Tx) jobLoads(key []byte, sum uint32) (l Loads, present, tied bool, err error) {
	if t.schema < loadsSchema {
		return Loads{}, false, false, nil
	}
	v, err := t.kv.Get(bLoads, key)
	if err != nil || v == nil {
		return Loads{}, false, false, err
	}
	data, err := unframeRecord(v, false)
	if err != nil {
		return Loads{}, true, false, fmt.Errorf("link loads: %v", err)
	}
	got, l, err := decodeLoads(data)
	if err != nil {
		return Loads{}, true, false, fmt.Errorf("link loads: %v", err)
	}
	return l, true, got == sum, nil
}

func encodeLoads(sum uint32, l Loads) ([]byte, error) {
	if len(l.Links) != len(l.Routes) || l.AB != nil && len(l.AB) != len(l.Links) {
		return nil, fmt.Errorf("%d links, %d counts, %d by direction", len(l.Links), len(l.Routes), len(l.AB))
	}
	b := make([]byte, 5, 5+binary.MaxVarintLen32*(1+3*len(l.Links)))
	b[0] = 1
	if l.AB != nil {
		b[0] = loadsVersion
	}
	binary.BigEndian.PutUint32(b[1:5], sum)
	b = binary.AppendUvarint(b, uint64(len(l.Links)))
	prev := int32(-1)
	for _, id := range l.Links {
		if id <= prev {
			return nil, fmt.Errorf("link %d after %d: not ascending", id, prev)
		}
		b = binary.AppendUvarint(b, uint64(id-prev-1))
		prev = id
	}
	for _, n := range l.Routes {
		if n <= 0 {
			return nil, fmt.Errorf("%d routes on a link", n)
		}
		b = binary.AppendUvarint(b, uint64(n))
	}
	for i, n := range l.AB {
		if n < 0 || n > l.Routes[i] {
			return nil, fmt.Errorf("%d of %d routes one way over a link", n, l.Routes[i])
		}
		b = binary.AppendUvarint(b, uint64(n))
	}
	return b, nil
}

var errLoadsForm = errors.New("malformed")

func decodeLoads(b []byte) (sum uint32, l Loads, err error) {
	if len(b) < 5 || b[0] < 1 || b[0] > loadsVersion {
		return 0, Loads{}, fmt.Errorf("%w: version or length", errLoadsForm)
	}
	sum = binary.BigEndian.Uint32(b[1:5])
	version := b[0]
	b = b[5:]
	next := func() (uint64, bool) {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, false
		}
		b = b[k:]
		return v, true
	}
	n, ok := next()
	if !ok || n > uint64(len(b)) {
		return 0, Loads{}, fmt.Errorf("%w: count", errLoadsForm)
	}
	l = Loads{Links: make([]int32, n), Routes: make([]int32, n)}
	id := int64(-1)
	for i := range l.Links {
		g, ok := next()
		if !ok || g >= 1<<31 {
			return 0, Loads{}, fmt.Errorf("%w: link %d", errLoadsForm, i)
		}
		if id += int64(g) + 1; id >= 1<<31 {
			return 0, Loads{}, fmt.Errorf("%w: link %d", errLoadsForm, i)
		}
		l.Links[i] = int32(id)
	}
	for i := range l.Routes {
		c, ok := next()
		if !ok || c == 0 || c >= 1<<31 {
			return 0, Loads{}, fmt.Errorf("%w: count %d", errLoadsForm, i)
		}
		l.Routes[i] = int32(c)
	}
	if version >= 2 {
		l.AB = make([]int32, n)
		for i := range l.AB {
			c, ok := next()
			if !ok || c > uint64(l.Routes[i]) {
				return 0, Loads{}, fmt.Errorf("%w: count by direction %d", errLoadsForm, i)
			}
			l.AB[i] = int32(c)
		}
	}
	if len(b) != 0 {
		return 0, Loads{}, fmt.Errorf("%w: %d bytes left", errLoadsForm, len(b))
	}
	return sum, l, nil
}
