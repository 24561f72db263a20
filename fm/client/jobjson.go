package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/icn-hpc/icn/routing"
)

// flushFunc takes the bytes encoded so far and returns the buffer to go
// on with (streaming); nil means keep appending.
type flushFunc func(b []byte) ([]byte, error)

// appendTableJSON appends tf as compact JSON, the same value
// json.Marshal gives, with the routes written by hand (reflection over a
// million routes costs seconds). With flush, the routes are handed over
// in pieces of about 64 KiB; errors can only come before the first piece.
func appendTableJSON(b []byte, tf *routing.TableJSON, flush flushFunc) ([]byte, error) {
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
	return appendJobTable(out, b, j.Table, nil)
}

// appendJobTable appends a job encoded without its table (fields) with
// the table added as its last key.
func appendJobTable(out, fields []byte, tf *routing.TableJSON, flush flushFunc) ([]byte, error) {
	out = append(out, fields[:len(fields)-1]...)
	out = append(out, `,"table":`...)
	out, err := appendTableJSON(out, tf, flush)
	if err != nil {
		return nil, err
	}
	return append(out, '}'), nil
}

// LargeTable returns the table of v (a job or a table) if its routes take
// more than limit bytes of JSON.
func LargeTable(v any, limit int) *routing.TableJSON {
	var tf *routing.TableJSON
	switch x := v.(type) {
	case *JobRecord:
		if x != nil {
			tf = x.Table
		}
	case *routing.TableJSON:
		tf = x
	}
	if tf == nil || routesJSONSize(tf.Routes) <= limit {
		return nil
	}
	return tf
}

// StreamJSON writes a job or a table with a large routing table as
// compact JSON in pieces, never holding the whole text; start is called
// (once) just before the first byte goes out. An error means nothing was
// written.
func StreamJSON(w io.Writer, v any, start func()) error {
	started := false
	flush := func(b []byte) ([]byte, error) {
		if !started {
			start()
			started = true
		}
		_, err := w.Write(b)
		return b[:0], err
	}
	buf := make([]byte, 0, 1<<17)
	var err error
	switch x := v.(type) {
	case *JobRecord:
		c := jobFields(*x)
		c.Table = nil
		var fields []byte
		if fields, err = json.Marshal(&c); err == nil {
			buf, err = appendJobTable(buf, fields, x.Table, flush)
		}
	case *routing.TableJSON:
		buf, err = appendTableJSON(buf, x, flush)
	default:
		return fmt.Errorf("cannot stream %T", v)
	}
	if err != nil {
		if started {
			return nil // the client sees a cut answer; nothing else to do
		}
		return err
	}
	_, err = flush(append(buf, '\n'))
	return err
}

// MarshalJSON is json.Marshal without its second pass over a job's
// hand-written JSON (which is compact and HTML-escaped already).
func MarshalJSON(v any) ([]byte, error) {
	switch x := v.(type) {
	case *JobRecord:
		if x != nil {
			return x.MarshalJSON()
		}
	case *routing.TableJSON:
		if x != nil {
			return appendTableJSON(make([]byte, 0, routesJSONSize(x.Routes)+4096), x, nil)
		}
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

// jobWire is a job as stored, its table left undecoded.
type jobWire struct {
	jobFields
	Table json.RawMessage `json:"table,omitempty"`
}

// tableWire is a table as stored, its routes left undecoded.
type tableWire struct {
	routing.TableJSON
	Routes json.RawMessage `json:"routes"`
}

// UnmarshalJSON decodes a job as encoding/json would; the routes of its
// table are parsed by hand into shared coordinate and direction lists
// (as routing.Table.JSON builds them), falling back to encoding/json for any
// text the fast parser does not take.
func (j *JobRecord) UnmarshalJSON(data []byte) error {
	var w jobWire
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*j = JobRecord(w.jobFields)
	if len(w.Table) == 0 || string(w.Table) == "null" {
		j.Table = nil
		return nil
	}
	var tw tableWire
	if err := json.Unmarshal(w.Table, &tw); err != nil {
		return err
	}
	tf := tw.TableJSON
	tf.Routes = nil
	if len(tw.Routes) > 0 && string(tw.Routes) != "null" {
		routes, ok := parseRoutes(tw.Routes)
		if !ok {
			if err := json.Unmarshal(tw.Routes, &routes); err != nil {
				return err
			}
		}
		tf.Routes = routes
	}
	j.Table = &tf
	return nil
}

// parseRoutes reads a compact routes array as appendTableJSON writes it.
func parseRoutes(b []byte) ([]routing.RouteJSON, bool) {
	p := &wireParser{b: b, ints: map[string][]int{}, strs: map[string][]string{}}
	if !p.lit("[") {
		return nil, false
	}
	routes := []routing.RouteJSON{}
	if p.lit("]") {
		return routes, p.i == len(b)
	}
	for {
		var r routing.RouteJSON
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

// IndentLimit is the size up to which answers are indented; larger ones
// (a job with a million routes) are sent compact: indenting them costs
// seconds and gigabytes for whitespace.
const IndentLimit = 1 << 20

// Encode encodes an answer as writeJSON sends it: indented up to
// IndentLimit, with a final newline.
func Encode(v any) ([]byte, error) {
	data, err := MarshalJSON(v)
	if err != nil {
		return nil, err
	}
	if len(data) <= IndentLimit {
		var buf bytes.Buffer
		if json.Indent(&buf, data, "", " ") == nil {
			data = buf.Bytes()
		}
	}
	return append(data, '\n'), nil
}
