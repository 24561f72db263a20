package routing

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// The compact JSON of a table (TableJSON) as the fabric manager sends and
// stores it: the value json.Marshal gives, with the routes written and
// read by hand (reflection over a million routes costs seconds).

// AppendTableJSON appends tf as compact JSON, the same value
// json.Marshal gives, with the routes written by hand (reflection over a
// million routes costs seconds). With flush, the routes are handed over
// in pieces of about 64 KiB; errors can only come before the first piece.
func AppendTableJSON(b []byte, tf *TableJSON, flush func(b []byte) ([]byte, error)) ([]byte, error) {
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
		if flush != nil && len(b) >= 1<<16 {
			if b, err = flush(b); err != nil {
				return nil, err
			}
		}
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
		if plainJSONString(s) {
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

// plainJSONString reports whether s needs no escaping in JSON (letters,
// digits, '+', '-').
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-') {
			return false
		}
	}
	return true
}

// RoutesJSONSize is the exact length of the routes as AppendTableJSON
// writes them when every direction is a plain string (so that the output
// buffer is allocated once).
func RoutesJSONSize(routes []RouteJSON) int {
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

// ParseRoutesJSON reads a compact routes array as AppendTableJSON writes
// it, the routes sharing their coordinate and direction lists (as
// Table.JSON builds them); false when the text is not in that form (then
// encoding/json should decide).
func ParseRoutesJSON(b []byte) ([]RouteJSON, bool) {
	p := &wireParser{b: b, ints: map[string][]int{}, strs: map[string][]string{}}
	if !p.lit("[") {
		return nil, false
	}
	routes := []RouteJSON{}
	if p.lit("]") {
		return routes, p.i == len(b)
	}
	for {
		var r RouteJSON
		var ok1, ok2, ok3 bool
		if !p.lit(`{"src":`) {
			return nil, false
		}
		r.Src, ok1 = p.intList()
		if !p.lit(`,"dst":`) {
			return nil, false
		}
		r.Dst, ok2 = p.intList()
		if !p.lit(`,"dirs":`) {
			return nil, false
		}
		r.Dirs, ok3 = p.strList()
		if !ok1 || !ok2 || !ok3 || !p.lit("}") {
			return nil, false
		}
		routes = append(routes, r)
		if p.lit("]") {
			return routes, p.i == len(b)
		}
		if !p.lit(",") {
			return nil, false
		}
	}
}

type wireParser struct {
	b    []byte
	i    int
	ints map[string][]int
	strs map[string][]string
}

func (p *wireParser) lit(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// list returns the raw text of a flat array ("[" … "]") with only the
// given bytes inside.
func (p *wireParser) list(ok func(c byte) bool) ([]byte, bool) {
	if p.i >= len(p.b) || p.b[p.i] != '[' {
		return nil, false
	}
	k := p.i + 1
	for k < len(p.b) && p.b[k] != ']' {
		if !ok(p.b[k]) {
			return nil, false
		}
		k++
	}
	if k == len(p.b) {
		return nil, false
	}
	raw := p.b[p.i : k+1]
	p.i = k + 1
	return raw, true
}

func (p *wireParser) intList() ([]int, bool) {
	raw, ok := p.list(func(c byte) bool { return c >= '0' && c <= '9' || c == ',' })
	if !ok {
		return nil, false
	}
	if l, ok := p.ints[string(raw)]; ok {
		return l, true
	}
	l := []int{}
	for _, f := range strings.Split(string(raw[1:len(raw)-1]), ",") {
		if f == "" && len(raw) == 2 {
			break
		}
		v, err := strconv.Atoi(f)
		if err != nil || len(f) > 9 {
			return nil, false
		}
		l = append(l, v)
	}
	p.ints[string(raw)] = l
	return l, true
}

func (p *wireParser) strList() ([]string, bool) {
	raw, ok := p.list(func(c byte) bool {
		return c == '"' || c == ',' || c == '+' || c == '-' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	})
	if !ok {
		return nil, false
	}
	if l, ok := p.strs[string(raw)]; ok {
		return l, true
	}
	l := []string{}
	if len(raw) > 2 {
		for _, f := range strings.Split(string(raw[1:len(raw)-1]), ",") {
			if len(f) < 2 || f[0] != '"' || f[len(f)-1] != '"' || strings.Contains(f[1:len(f)-1], `"`) {
				return nil, false
			}
			l = append(l, f[1:len(f)-1])
		}
	}
	p.strs[string(raw)] = l
	return l, true
}
