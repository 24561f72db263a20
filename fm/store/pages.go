package store

import (
	"encoding/binary"
	"fmt"
	"os"
)

// bbolt's page types.
const (
	branchPage = 0x01
	leafPage   = 0x02
)

// maxTreeDepth bounds the B+ tree walk (a cycle of pages, or absurd
// depth, is damage).
const maxTreeDepth = 64

// walkTree checks, before bbolt reads the file through its memory map,
// every page of the B+ trees reachable from the meta page m: each page
// says it is the page it is read as, is a branch or leaf page, lies with
// its overflow below the high-water mark, is reached once, and its
// elements (keys, values, child ids, bucket headers and inline buckets)
// lie inside it. Damage gets a message naming the page instead of a
// panic or an index out of range inside bbolt.
func walkTree(f *os.File, m *boltMeta, ps int64) error {
	w := &treeWalk{f: f, m: m, ps: ps, seen: map[uint64]bool{}}
	return w.visit(m.root, 0)
}

type treeWalk struct {
	f    *os.File
	m    *boltMeta
	ps   int64
	seen map[uint64]bool
}

func (w *treeWalk) visit(id uint64, depth int) error {
	if id < 2 || id >= w.m.hwm {
		return fmt.Errorf("a page refers to page %d, outside 2..%d", id, w.m.hwm-1)
	}
	if depth > maxTreeDepth {
		return fmt.Errorf("page %d: the tree is deeper than %d pages (a cycle of pages)", id, maxTreeDepth)
	}
	if w.seen[id] {
		return fmt.Errorf("page %d is reached twice", id)
	}
	w.seen[id] = true
	hdr := make([]byte, 16)
	if _, err := w.f.ReadAt(hdr, int64(id)*w.ps); err != nil {
		return fmt.Errorf("page %d: %v", id, err)
	}
	le := binary.LittleEndian
	if got := le.Uint64(hdr); got != id {
		return fmt.Errorf("page %d identifies itself as page %d", id, got)
	}
	overflow := uint64(le.Uint32(hdr[12:]))
	if id+1+overflow > w.m.hwm {
		return fmt.Errorf("page %d: %d overflow pages run past the high-water mark %d", id, overflow, w.m.hwm)
	}
	buf := make([]byte, int64(1+overflow)*w.ps)
	if _, err := w.f.ReadAt(buf, int64(id)*w.ps); err != nil {
		return fmt.Errorf("page %d: %v", id, err)
	}
	return w.page(buf, fmt.Sprintf("page %d", id), depth)
}

// page checks one page's elements (buf: the page with its overflow, or
// an inline bucket's page inside a value).
func (w *treeWalk) page(buf []byte, name string, depth int) error {
	if len(buf) < 16 {
		return fmt.Errorf("%s: %d bytes, shorter than a page header", name, len(buf))
	}
	le := binary.LittleEndian
	flags, count := le.Uint16(buf[8:]), int(le.Uint16(buf[10:]))
	if 16+16*count > len(buf) {
		return fmt.Errorf("%s: %d elements do not fit in %d bytes", name, count, len(buf))
	}
	for i := 0; i < count; i++ {
		e := 16 + 16*i
		switch flags {
		case branchPage:
			pos, ksize, child := int(le.Uint32(buf[e:])), int(le.Uint32(buf[e+4:])), le.Uint64(buf[e+8:])
			if e+pos+ksize > len(buf) || pos < 0 || ksize < 0 {
				return fmt.Errorf("%s (branch): key %d lies outside the page", name, i)
			}
			if err := w.visit(child, depth+1); err != nil {
				return err
			}
		case leafPage:
			eflags := le.Uint32(buf[e:])
			pos, ksize, vsize := int(le.Uint32(buf[e+4:])), int(le.Uint32(buf[e+8:])), int(le.Uint32(buf[e+12:]))
			start := e + pos
			if pos < 0 || ksize < 0 || vsize < 0 || start+ksize+vsize > len(buf) || start+ksize+vsize < start {
				return fmt.Errorf("%s (leaf): element %d lies outside the page", name, i)
			}
			if eflags&0x01 == 0 { // a key and its value
				continue
			}
			v := buf[start+ksize : start+ksize+vsize]
			if len(v) < 16 {
				return fmt.Errorf("%s (leaf): bucket header of element %d is %d bytes", name, i, len(v))
			}
			if root := le.Uint64(v); root != 0 {
				if err := w.visit(root, depth+1); err != nil {
					return err
				}
			} else if err := w.page(v[16:], fmt.Sprintf("inline bucket in %s", name), depth+1); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s has type %#x, not a branch or leaf page", name, flags)
		}
	}
	return nil
}
