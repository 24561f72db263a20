package routing

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Version 3 of the stored form: a version 2 value (the base) and routes
// that replace some of its routes (the patches), which a repair
// (RepairStored) writes so that a failure re-routes a few thousand routes
// of a table of millions without writing the others again:
//
//	0x80 0x00 0x03
//	uvarint b                      bytes of the base
//	the base (a version 2 value)
//	uvarint p                      patches, by increasing route index
//	p times:
//	    uvarint the route's index less the previous patch's index + 1
//	            (the first: its index)
//	    the route's steps (AppendRuns)
//
// Route i of the table is patch i's steps where there is one, else the
// base's route i. A patch does not change what the base predicts: the
// base is read as it was written.

// storedV3 is the first bytes of a value of version 3.
var storedV3 = [3]byte{0x80, 0x00, 0x03}

// storedPatch is one route a version 3 value replaces.
type storedPatch struct {
	index int
	runs  []byte // run bytes (CutRuns' runs)
}

// splitStoredV3 returns the base and the patches of a value of version 3
// for n routes.
func splitStoredV3(b []byte, n int) (base []byte, patches []storedPatch, err error) {
	bad := func(what string) error { return fmt.Errorf("stored routes damaged: %s", what) }
	lb, k := binary.Uvarint(b[3:])
	if k <= 0 || lb > uint64(len(b)-3-k) {
		return nil, nil, bad("length of the base routes")
	}
	pos := 3 + k
	base = b[pos : pos+int(lb)]
	if StoredRoutesVersion(base) != 2 || len(base) < 3 || base[2] != storedV2[2] {
		return nil, nil, bad("the base routes are not of version 2")
	}
	pos += int(lb)
	np, k := binary.Uvarint(b[pos:])
	if k <= 0 || np > uint64(n) || np > uint64(len(b)-pos) {
		return nil, nil, bad("count of replaced routes")
	}
	pos += k
	patches = make([]storedPatch, 0, np)
	next := 0
	for j := range int(np) {
		gap, k := binary.Uvarint(b[pos:])
		if k <= 0 || gap >= uint64(n-next) {
			return nil, nil, bad(fmt.Sprintf("index of replaced route %d", j))
		}
		pos += k
		i := next + int(gap)
		runs, rest, err := CutRuns(b[pos:], maxStoredDirs)
		if err != nil {
			return nil, nil, bad(fmt.Sprintf("replaced route %d (route %d) steps: %v", j, i, err))
		}
		patches = append(patches, storedPatch{i, runs})
		pos = len(b) - len(rest)
		next = i + 1
	}
	if pos != len(b) {
		return nil, nil, bad(fmt.Sprintf("%d bytes after the last replaced route", len(b)-pos))
	}
	return base, patches, nil
}

// eachStoredV3 is EachStoredRoute for a value of version 3.
func eachStoredV3(b []byte, tf *TableJSON, start func(n int), route func(src, dst int, runs []byte)) error {
	m := len(tf.Active)
	if m < 2 {
		return fmt.Errorf("stored routes damaged: replaced routes in a table of %d active nodes", m)
	}
	base, patches, err := splitStoredV3(b, m*(m-1))
	if err != nil {
		return err
	}
	i, next := 0, 0
	return eachStoredV2(base, tf, start, func(src, dst int, runs []byte) {
		if next < len(patches) && patches[next].index == i {
			runs = patches[next].runs
			next++
		}
		i++
		route(src, dst, runs)
	})
}

// appendStoredV3 writes a value of version 3: base (version 2) with the
// patches (sorted by index, each index once).
func appendStoredV3(base []byte, patches []storedPatch) []byte {
	size := len(base) + 16
	for _, p := range patches {
		size += len(p.runs) + 6
	}
	b := append(make([]byte, 0, size), storedV3[:]...)
	b = binary.AppendUvarint(b, uint64(len(base)))
	b = append(b, base...)
	b = binary.AppendUvarint(b, uint64(len(patches)))
	next := 0
	for _, p := range patches {
		b = binary.AppendUvarint(b, uint64(p.index-next))
		b = binary.AppendUvarint(b, uint64(len(p.runs)))
		b = append(b, p.runs...)
		next = p.index + 1
	}
	return slices.Clip(b)
}

// mergePatches returns the patches of old replaced by those of new at the
// same index, sorted by index (both sorted).
func mergePatches(old, new []storedPatch) []storedPatch {
	out := make([]storedPatch, 0, len(old)+len(new))
	i, j := 0, 0
	for i < len(old) || j < len(new) {
		switch {
		case j == len(new) || i < len(old) && old[i].index < new[j].index:
			out = append(out, old[i])
			i++
		case i == len(old) || new[j].index < old[i].index:
			out = append(out, new[j])
			j++
		default: // the same route: the new steps
			out = append(out, new[j])
			i++
			j++
		}
	}
	return out
}
