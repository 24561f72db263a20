package fm

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/icn-hpc/icn/routing"
)

// tableJSON converts a routing table to the file format (what
// Table.WriteJSON writes and routing.ReadTableJSON reads back) without a
// text round trip. Routes share one coordinate slice per node and one
// direction list per distinct step sequence, so a million routes cost
// tens of megabytes, not gigabytes. The slices must not be modified.
func tableJSON(tb *routing.Table) *routing.TableJSON {
	g := tb.Graph()
	coords := make(map[int][]int, len(tb.Active))
	coord := func(v int) []int {
		c, ok := coords[v]
		if !ok {
			c = g.Coord(v)
			coords[v] = c
		}
		return c
	}
	list := func(vs []int) [][]int {
		out := make([][]int, len(vs))
		for i, v := range vs {
			out[i] = coord(v)
		}
		return out
	}
	var dirNames [2 * routing.MaxDims]string
	for d := range dirNames {
		dirNames[d] = routing.Dir(d).String()
	}
	n := tb.NumRoutes()
	tf := &routing.TableJSON{Dims: g.Dims(), Rules: tb.Rule.Kind.String(), Routes: make([]routing.RouteJSON, n),
		DeadlockFree: tb.DeadlockFree, Order: strings.Split(tb.Router().Rule().Order.String(), ","),
		Algo: tb.Algo.String(), Active: list(tb.Active)}
	st := tb.Stats
	tf.Stats = &st
	if len(tb.Transit) > 0 {
		tf.Transit = list(tb.Transit)
	}
	for _, l := range g.FailedLinks() {
		tf.FailedLinks = append(tf.FailedLinks, g.LinkName(l))
	}
	for _, v := range g.FailedNodes() {
		tf.FailedNodes = append(tf.FailedNodes, g.NodeName(v))
	}
	for _, c := range tb.Cycle {
		tf.Cycle = append(tf.Cycle, g.ChannelName(c))
	}
	// Routes with the same steps share one direction list (on a torus
	// most routes repeat a translated shape).
	shared := make(map[string][]string)
	var dirs []routing.Dir
	var key []byte
	for i := range n {
		src, dst := tb.Pair(i)
		dirs = tb.AppendDirs(i, dirs[:0])
		key = key[:0]
		for _, d := range dirs {
			key = append(key, byte(d))
		}
		l, ok := shared[string(key)]
		if !ok {
			l = make([]string, len(dirs))
			for k, d := range dirs {
				l[k] = dirNames[d]
			}
			shared[string(key)] = l
		}
		tf.Routes[i] = routing.RouteJSON{Src: coord(src), Dst: coord(dst), Dirs: l}
	}
	return tf
}

// appendTableJSON appends tf as compact JSON, the same value
// json.Marshal gives, with the routes written by hand (reflection over a
// million routes costs seconds).
func appendTableJSON(b []byte, tf *routing.TableJSON) ([]byte, error) {
	head := *tf
	head.Routes = nil
	hb, err := json.Marshal(&head)
	if err != nil {
		return nil, err
	}
	const null = `"routes":null`
	at := bytes.Index(hb, []byte(null))
	if at < 0 || tf.Routes == nil {
		return append(b, hb...), nil
	}
	b = append(b, hb[:at+len(null)-len("null")]...)
	b = append(b, '[')
	for i := range tf.Routes {
		if i > 0 {
			b = append(b, ',')
		}
		r := &tf.Routes[i]
		b = append(b, `{"src":`...)
		b = appendIntList(b, r.Src)
		b = append(b, `,"dst":`...)
		b = appendIntList(b, r.Dst)
		b = append(b, `,"dirs":`...)
		b = appendStringList(b, r.Dirs)
		b = append(b, '}')
	}
	b = append(b, ']')
	return append(b, hb[at+len(null):]...), nil
}

func appendIntList(b []byte, l []int) []byte {
	if l == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range l {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(v), 10)
	}
	return append(b, ']')
}

func appendStringList(b []byte, l []string) []byte {
	if l == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range l {
		if i > 0 {
			b = append(b, ',')
		}
		if plainString(s) {
			b = append(b, '"')
			b = append(b, s...)
			b = append(b, '"')
		} else {
			q, _ := json.Marshal(s)
			b = append(b, q...)
		}
	}
	return append(b, ']')
}

// plainString reports whether s needs no escaping in JSON (letters,
// digits, '+', '-').
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-') {
			return false
		}
	}
	return true
}

// jobFields is JobRecord without its methods (for MarshalJSON).
type jobFields JobRecord

// MarshalJSON encodes a job as encoding/json would, with the routing
// table written by appendTableJSON (placed last among the keys).
func (j *JobRecord) MarshalJSON() ([]byte, error) {
	c := jobFields(*j)
	c.Table = nil
	b, err := json.Marshal(&c)
	if err != nil || j.Table == nil {
		return b, err
	}
	out := make([]byte, 0, len(b)+len(`,"table":`)+routesJSONSize(j.Table.Routes)+4096)
	out = append(out, b[:len(b)-1]...)
	out = append(out, `,"table":`...)
	if out, err = appendTableJSON(out, j.Table); err != nil {
		return nil, err
	}
	return append(out, '}'), nil
}

// marshalJSON is json.Marshal without its second pass over a job's
// hand-written JSON (which is compact and HTML-escaped already).
func marshalJSON(v any) ([]byte, error) {
	if j, ok := v.(*JobRecord); ok && j != nil {
		return j.MarshalJSON()
	}
	return json.Marshal(v)
}

// routesJSONSize is the exact length of the routes as appendTableJSON
// writes them when every direction is a plain string (so that the output
// buffer is allocated once).
func routesJSONSize(routes []routing.RouteJSON) int {
	n := 2
	for i := range routes {
		r := &routes[i]
		n += len(`{"src":,"dst":,"dirs":[]},`) + intListSize(r.Src) + intListSize(r.Dst)
		for k, d := range r.Dirs {
			n += len(d) + 2
			if k > 0 {
				n++
			}
		}
	}
	return n
}

func intListSize(l []int) int {
	n := 2
	for k, v := range l {
		if k > 0 {
			n++
		}
		if v < 0 {
			n++
			v = -v
		}
		for n++; v >= 10; v /= 10 {
			n++
		}
	}
	return n
}
