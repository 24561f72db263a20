package routing

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strings"
)

// The compact route file (`icn route --format routes -o FILE`), version 1:
//
//	# icn routes v1\n                     magic line
//	{header JSON}\n                        one line, RoutesHeader
//	nodes block                            active then transit node ids: the first of each list
//	                                       as a uvarint, the rest as uvarint gaps (≥ 1)
//	CRC-32C of the header line and the nodes block (4 bytes, little endian)
//	one record per active source, in active order:
//	    uvarint source index (0, 1, … in order)
//	    uvarint k = routes in the record
//	    k times: uvarint destination gap (destination index − previous, the
//	             first counted from −1), uvarint r, r run bytes:
//	             high nibble direction (2·dim, +1 if negative), low nibble
//	             repeat count − 1 (runs longer than 16 steps are split)
//	    CRC-32C of the record's bytes (4 bytes, little endian)
//	# end\n                                trailer
//
// Node ids are mixed radix over dims, X fastest. Indices are positions in
// the active list. A 16x16x16 table (16.8 M routes) takes about 100 MB.

// RoutesMagic is the first line of a compact route file.
const RoutesMagic = "# icn routes v1\n"

const routesTrailer = "# end\n"

// RoutesHeader is the JSON header line of a compact route file.
type RoutesHeader struct {
	Dims         []int    `json:"dims"`
	Mesh         []string `json:"mesh,omitempty"` // mesh dimensions by letter, as in TableJSON
	Rules        string   `json:"rules"`
	Order        []string `json:"order,omitempty"`
	Algo         string   `json:"algo,omitempty"`
	FailedLinks  []string `json:"failed_links,omitempty"`
	FailedNodes  []string `json:"failed_nodes,omitempty"`
	Active       int      `json:"active"`
	Transit      int      `json:"transit"`
	Routes       int64    `json:"routes"`
	Figures      *Figures `json:"stats,omitempty"`
	DeadlockFree bool     `json:"deadlock_free"`
	Cycle        []string `json:"cycle,omitempty"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maxRunBytes bounds the run bytes of one route (a minimal route is far
// shorter; the bound keeps a corrupt file from asking for much memory).
const maxRunBytes = 1 << 16

// WriteRoutes writes the table in the compact route format.
func (tb *Table) WriteRoutes(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	h := RoutesHeader{Dims: tb.r.t.dims, Mesh: tb.r.t.meshLetters(), Rules: tb.Rule.Kind.String(), Order: strings.Split(tb.r.order.String(), ","), Algo: tb.Algo.String(),
		Active: len(tb.Active), Transit: len(tb.Transit), Routes: int64(tb.NumRoutes()), Figures: &tb.Figures, DeadlockFree: tb.DeadlockFree}
	h.FailedLinks, h.FailedNodes, h.Cycle = tb.failureNames()
	return writeRoutes(bw, h, tb.Active, tb.Transit, func(a, b int, dirs []Dir) []Dir {
		return tb.AppendDirs(pairIndex(len(tb.Active), a, b), dirs)
	})
}

// WriteRoutesJSON writes a table held in the JSON form (as ReadTableJSON
// returns it, or as a service keeps it) in the compact route format: the
// same file WriteRoutes writes for the table it came from. Every ordered
// pair of active nodes must have exactly one route.
func WriteRoutesJSON(w io.Writer, tf *TableJSON) error {
	if err := checkDims(tf.Dims); err != nil {
		return err
	}
	ids := func(list [][]int) ([]int, error) {
		out := make([]int, len(list))
		for i, c := range list {
			if len(c) != len(tf.Dims) {
				return nil, fmt.Errorf("node %d has %d coordinates for %d dimensions", i, len(c), len(tf.Dims))
			}
			id := 0
			for k := len(c) - 1; k >= 0; k-- {
				if c[k] < 0 || c[k] >= tf.Dims[k] {
					return nil, fmt.Errorf("node %v lies outside %v", c, tf.Dims)
				}
				id = id*tf.Dims[k] + c[k]
			}
			out[i] = id
		}
		return out, nil
	}
	active, err := ids(tf.Active)
	if err != nil {
		return err
	}
	transit, err := ids(tf.Transit)
	if err != nil {
		return err
	}
	m := len(active)
	index := make(map[int]int, m)
	for i, v := range active {
		index[v] = i
	}
	route := make([]int32, m*m) // a·m + b → route index + 1
	for i, r := range tf.Routes {
		src, dst := 0, 0
		for k := len(tf.Dims) - 1; k >= 0 && len(r.Src) == len(tf.Dims) && len(r.Dst) == len(tf.Dims); k-- {
			src, dst = src*tf.Dims[k]+r.Src[k], dst*tf.Dims[k]+r.Dst[k]
		}
		a, ok1 := index[src]
		b, ok2 := index[dst]
		if !ok1 || !ok2 || a == b {
			return fmt.Errorf("route %d does not join two active nodes", i+1)
		}
		if route[a*m+b] != 0 {
			return fmt.Errorf("route %d repeats the pair of route %d", i+1, route[a*m+b])
		}
		route[a*m+b] = int32(i + 1)
		for _, s := range r.Dirs {
			if _, err := ParseDir(s); err != nil {
				return fmt.Errorf("route %d: %v", i+1, err)
			}
		}
	}
	if len(tf.Routes) != m*(m-1) {
		// Every pair has at most one route (above), so some pair has none.
		return fmt.Errorf("%d routes for %d ordered pairs of active nodes", len(tf.Routes), m*(m-1))
	}
	h := RoutesHeader{Dims: tf.Dims, Mesh: tf.Mesh, Rules: tf.Rules, Order: tf.Order, Algo: tf.Algo, FailedLinks: tf.FailedLinks,
		FailedNodes: tf.FailedNodes, Active: m, Transit: len(transit), Routes: int64(len(tf.Routes)), Figures: tf.Figures,
		DeadlockFree: tf.DeadlockFree, Cycle: tf.Cycle}
	var bad error
	bw := bufio.NewWriterSize(w, 1<<16)
	err = writeRoutes(bw, h, active, transit, func(a, b int, dirs []Dir) []Dir {
		i := route[a*m+b]
		if i == 0 {
			if bad == nil {
				bad = fmt.Errorf("no route from active node %d to %d", a, b)
			}
			return dirs
		}
		for _, s := range tf.Routes[i-1].Dirs {
			d, err := ParseDir(s)
			if err != nil && bad == nil {
				bad = fmt.Errorf("route %d: %v", i, err)
			}
			dirs = append(dirs, d)
		}
		return dirs
	})
	if bad != nil {
		return bad
	}
	return err
}

// writeRoutes writes a compact route file: header, node lists, then one
// record per active source with the steps dirsOf appends for each
// destination.
func writeRoutes(bw *bufio.Writer, h RoutesHeader, active, transit []int, dirsOf func(a, b int, dirs []Dir) []Dir) error {
	hj, err := json.Marshal(h)
	if err != nil {
		return err
	}
	bw.WriteString(RoutesMagic)
	buf := append(hj, '\n')
	for _, list := range [2][]int{active, transit} {
		prev := -1
		for i, v := range list {
			if i == 0 {
				buf = binary.AppendUvarint(buf, uint64(v))
			} else {
				buf = binary.AppendUvarint(buf, uint64(v-prev))
			}
			prev = v
		}
	}
	buf = binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
	bw.Write(buf)
	m := len(active)
	var dirs []Dir
	for a := 0; a < m; a++ {
		rec := binary.AppendUvarint(buf[:0], uint64(a))
		rec = binary.AppendUvarint(rec, uint64(max(0, m-1)))
		prev := -1
		for b := 0; b < m; b++ {
			if b == a {
				continue
			}
			dirs = dirsOf(a, b, dirs[:0])
			rec = binary.AppendUvarint(rec, uint64(b-prev))
			prev = b
			rec = AppendRuns(rec, dirs)
		}
		rec = binary.LittleEndian.AppendUint32(rec, crc32.Checksum(rec, castagnoli))
		if _, err := bw.Write(rec); err != nil {
			return err
		}
		buf = rec
	}
	bw.WriteString(routesTrailer)
	return bw.Flush()
}

// AppendRuns appends the steps of a route as the compact format (and the
// fabric manager's store) keeps them: uvarint r, then r run bytes, each
// the direction in its high nibble and the repeat count − 1 in its low
// one (runs longer than 16 steps are split).
func AppendRuns(b []byte, dirs []Dir) []byte {
	at := len(b)
	b = append(b, 0) // the count: one byte below 128 runs (every minimal route)
	n := 0
	for i := 0; i < len(dirs); {
		j := i + 1
		for j < len(dirs) && dirs[j] == dirs[i] && j-i < 16 {
			j++
		}
		b = append(b, byte(dirs[i])<<4|byte(j-i-1))
		n++
		i = j
	}
	if n < 128 {
		b[at] = byte(n)
		return b
	}
	runs := append([]byte(nil), b[at+1:]...)
	return append(binary.AppendUvarint(b[:at], uint64(n)), runs...)
}

// RecordError reports a structurally bad record of a table file: record
// (1-based: a source record of a compact file, a route of a JSON file) and
// what is wrong with it. A check stops at the first one.
type RecordError struct {
	Record int
	What   string // "record" or "route"
	Msg    string
}

func (e *RecordError) Error() string {
	if e.Record == 0 {
		return e.What + ": " + e.Msg
	}
	return fmt.Sprintf("%s %d: %s", e.What, e.Record, e.Msg)
}

// crcReader reads bytes and keeps them for the checksum of the current
// record.
type crcReader struct {
	br  *bufio.Reader
	rec []byte
}

func (c *crcReader) ReadByte() (byte, error) {
	b, err := c.br.ReadByte()
	if err == nil {
		c.rec = append(c.rec, b)
	}
	return b, err
}

func (c *crcReader) uvarint(limit uint64) (uint64, error) {
	x, err := binary.ReadUvarint(c)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, err
	}
	if x > limit {
		return 0, fmt.Errorf("value %d out of range (at most %d)", x, limit)
	}
	return x, nil
}

// checkCRC reads the 4-byte checksum that follows the bytes read since
// the last reset and compares it.
func (c *crcReader) checkCRC() error {
	want := crc32.Checksum(c.rec, castagnoli)
	var b [4]byte
	if _, err := io.ReadFull(c.br, b[:]); err != nil {
		return io.ErrUnexpectedEOF
	}
	if binary.LittleEndian.Uint32(b[:]) != want {
		return errors.New("checksum mismatch (the file was altered or damaged)")
	}
	c.rec = c.rec[:0]
	return nil
}

// readRoutesHeader reads the magic line, the header and the node lists of
// a compact file (the reader must be at the start of the file).
func readRoutesHeader(c *crcReader) (*RoutesHeader, []int, []int, error) {
	magic := make([]byte, len(RoutesMagic))
	if _, err := io.ReadFull(c.br, magic); err != nil || string(magic) != RoutesMagic {
		return nil, nil, nil, fmt.Errorf("not a compact route file (want the line %q first)", strings.TrimSpace(RoutesMagic))
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return nil, nil, nil, err
	}
	c.rec = append(c.rec[:0], line...)
	var h RoutesHeader
	if err := json.Unmarshal(line, &h); err != nil {
		return nil, nil, nil, err
	}
	if err := checkDims(h.Dims); err != nil {
		return nil, nil, nil, err
	}
	if _, err := meshFlags(h.Mesh, len(h.Dims)); err != nil {
		return nil, nil, nil, err
	}
	nodes := 1
	for _, d := range h.Dims {
		nodes *= d
	}
	if h.Active < 0 || h.Transit < 0 || h.Active+h.Transit > nodes {
		return nil, nil, nil, fmt.Errorf("%d active and %d transit nodes in a torus of %d", h.Active, h.Transit, nodes)
	}
	lists := [2][]int{make([]int, h.Active), make([]int, h.Transit)}
	for k := range lists {
		prev := -1
		for i := range lists[k] {
			x, err := c.uvarint(uint64(nodes))
			if err != nil {
				return nil, nil, nil, fmt.Errorf("node list: %v", err)
			}
			v := int(x)
			if i > 0 {
				if x == 0 {
					return nil, nil, nil, errors.New("node list: not increasing")
				}
				v = prev + int(x)
			}
			if v >= nodes {
				return nil, nil, nil, fmt.Errorf("node list: node id %d outside the torus of %d nodes", v, nodes)
			}
			lists[k][i] = v
			prev = v
		}
	}
	if err := c.checkCRC(); err != nil {
		return nil, nil, nil, err
	}
	return &h, lists[0], lists[1], nil
}

// checkDims validates torus sizes named in a file.
func checkDims(dims []int) error {
	if len(dims) == 0 || len(dims) > MaxDims {
		return fmt.Errorf("dims must list 1..%d sizes", MaxDims)
	}
	total := 1
	for _, d := range dims {
		if d < 2 || d > 1<<15 {
			return fmt.Errorf("torus size %d out of range 2..32768", d)
		}
		total *= d
		if total > 1<<24 {
			return fmt.Errorf("more than %d nodes", 1<<24)
		}
	}
	return nil
}

// readRoutesRecords streams the records of a compact file to emit (active
// indices of source and destination, directions); it stops at the first
// structurally bad record with a *RecordError, and between records with
// ctx's error when ctx ends.
func readRoutesRecords(ctx context.Context, c *crcReader, m, nd int, emit func(a, b int, dirs []Dir)) error {
	var dirs []Dir
	for a := 0; a < m; a++ {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		bad := func(format string, args ...any) error {
			return &RecordError{Record: a + 1, What: "record", Msg: fmt.Sprintf(format, args...)}
		}
		c.rec = c.rec[:0]
		src, err := c.uvarint(uint64(m))
		if err != nil {
			return bad("source: %v", err)
		}
		if int(src) != a {
			return bad("source index %d, want %d (records missing or out of order)", src, a)
		}
		k, err := c.uvarint(uint64(m))
		if err != nil {
			return bad("route count: %v", err)
		}
		prev := -1
		for i := 0; i < int(k); i++ {
			gap, err := c.uvarint(uint64(m))
			if err != nil {
				return bad("route %d: destination: %v", i+1, err)
			}
			b := prev + int(gap)
			if gap == 0 || b >= m {
				return bad("route %d: destination index %d out of order or range", i+1, b)
			}
			prev = b
			runs, err := c.uvarint(maxRunBytes)
			if err != nil {
				return bad("route %d: run count: %v", i+1, err)
			}
			dirs = dirs[:0]
			for j := 0; j < int(runs); j++ {
				x, err := c.ReadByte()
				if err != nil {
					return bad("route %d: %v", i+1, io.ErrUnexpectedEOF)
				}
				d := Dir(x >> 4)
				if int(d) >= nd {
					return bad("route %d: direction code %d is not a direction of a %d-dimensional torus", i+1, d, nd/2)
				}
				for r := int(x&15) + 1; r > 0; r-- {
					dirs = append(dirs, d)
				}
			}
			emit(a, b, dirs)
		}
		if err := c.checkCRC(); err != nil {
			return bad("%v", err)
		}
	}
	t := make([]byte, len(routesTrailer))
	if _, err := io.ReadFull(c.br, t); err != nil || string(t) != routesTrailer {
		return &RecordError{Record: m + 1, What: "record", Msg: "no end line after the last record (the file is truncated or has extra data)"}
	}
	if _, err := c.br.ReadByte(); err != io.EOF {
		return &RecordError{Record: m + 1, What: "record", Msg: "data after the end line"}
	}
	return nil
}
