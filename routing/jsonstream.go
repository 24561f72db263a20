package routing

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Streaming a JSON table: a byte-level scanner walks the top-level
// object, keeps the small values (everything but "routes") and notes where
// the routes array starts; the routes are then decoded one object at a
// time, in a second pass when they came before the other keys.

type jscan struct {
	br      *bufio.Reader
	off     int64
	capture bool
	buf     []byte
}

func (s *jscan) next() (byte, error) {
	b, err := s.br.ReadByte()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return 0, err
	}
	s.off++
	if s.capture {
		s.buf = append(s.buf, b)
	}
	return b, nil
}

// nonSpace returns the next byte that is not JSON white space.
func (s *jscan) nonSpace() (byte, error) {
	for {
		b, err := s.next()
		if err != nil {
			return 0, err
		}
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b, nil
	}
}

// value consumes the rest of a JSON value whose first byte was b (syntax
// is checked loosely here; captured values go through encoding/json).
func (s *jscan) value(b byte) error {
	switch b {
	case '"':
		return s.str()
	case '{', '[':
		depth := 1
		for depth > 0 {
			c, err := s.next()
			if err != nil {
				return err
			}
			switch c {
			case '"':
				if err := s.str(); err != nil {
					return err
				}
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
		}
		return nil
	}
	// number, true, false, null: up to a delimiter
	for {
		c, err := s.br.Peek(1)
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		switch c[0] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return nil
		}
		if _, err := s.next(); err != nil {
			return err
		}
	}
}

// str consumes a string after its opening quote.
func (s *jscan) str() error {
	for {
		c, err := s.next()
		if err != nil {
			return err
		}
		switch c {
		case '\\':
			if _, err := s.next(); err != nil {
				return err
			}
		case '"':
			return nil
		}
	}
}

// captureValue returns the raw bytes of the value starting with b.
func (s *jscan) captureValue(b byte) ([]byte, error) {
	s.capture = true
	s.buf = append(s.buf[:0], b)
	err := s.value(b)
	s.capture = false
	return s.buf, err
}

// scanJSONHeader reads the top-level object: every key but "routes" into
// h, and the offset (from the start of the scan) of the '[' of "routes".
func scanJSONHeader(s *jscan) (h *jsonHeader, routesAt int64, err error) {
	h = &jsonHeader{}
	routesAt = -1
	b, err := s.nonSpace()
	if err != nil || b != '{' {
		return nil, -1, errors.New("not a JSON object")
	}
	for {
		b, err := s.nonSpace()
		if err != nil {
			return nil, -1, err
		}
		if b == '}' {
			break
		}
		if b == ',' {
			continue
		}
		if b != '"' {
			return nil, -1, fmt.Errorf("unexpected %q at byte %d", b, s.off)
		}
		raw, err := s.captureValue(b)
		if err != nil {
			return nil, -1, err
		}
		var key string
		if err := json.Unmarshal(raw, &key); err != nil {
			return nil, -1, err
		}
		if b, err = s.nonSpace(); err != nil || b != ':' {
			return nil, -1, fmt.Errorf("want ':' after key %q", key)
		}
		if b, err = s.nonSpace(); err != nil {
			return nil, -1, err
		}
		if key == "routes" {
			if b != '[' {
				return nil, -1, errors.New("\"routes\" is not a list")
			}
			routesAt = s.off - 1
			if err := s.value(b); err != nil {
				return nil, -1, err
			}
			continue
		}
		raw, err = s.captureValue(b)
		if err != nil {
			return nil, -1, err
		}
		obj := append(append(append([]byte(`{"`), key...), `":`...), raw...)
		obj = append(obj, '}')
		if err := json.Unmarshal(obj, &h.TableJSON); err != nil {
			return nil, -1, fmt.Errorf("key %q: %v", key, err)
		}
	}
	switch {
	case h.Dims == nil:
		return nil, -1, errors.New("missing \"dims\"")
	case h.Rules == "":
		return nil, -1, errors.New("missing \"rules\"")
	case routesAt < 0:
		return nil, -1, errors.New("missing \"routes\"")
	}
	return h, routesAt, nil
}

// eachJSONRoute decodes the routes array (s positioned at its '[').
func eachJSONRoute(s *jscan, f func(i int, rt *RouteJSON) error) error {
	if b, err := s.nonSpace(); err != nil || b != '[' {
		return errors.New("\"routes\" is not a list")
	}
	var rt RouteJSON
	for i := 0; ; i++ {
		b, err := s.nonSpace()
		if err != nil {
			return &RecordError{Record: i + 1, What: "route", Msg: "the file ends inside the routes (truncated)"}
		}
		if b == ']' {
			return nil
		}
		if i > 0 {
			if b != ',' {
				return &RecordError{Record: i + 1, What: "route", Msg: fmt.Sprintf("want ',' between routes, found %q", b)}
			}
			if b, err = s.nonSpace(); err != nil {
				return &RecordError{Record: i + 1, What: "route", Msg: "the file ends inside the routes (truncated)"}
			}
		}
		raw, err := s.captureValue(b)
		if err != nil {
			return &RecordError{Record: i + 1, What: "route", Msg: "the file ends inside the routes (truncated)"}
		}
		rt = RouteJSON{Src: rt.Src[:0], Dst: rt.Dst[:0], Dirs: rt.Dirs[:0]}
		if !parseRouteFast(raw, &rt) {
			rt = RouteJSON{}
			if err := json.Unmarshal(raw, &rt); err != nil {
				return &RecordError{Record: i + 1, What: "route", Msg: fmt.Sprintf("not a route object: %v", err)}
			}
		}
		if rt.Src == nil || rt.Dst == nil || rt.Dirs == nil {
			return &RecordError{Record: i + 1, What: "route", Msg: "want \"src\", \"dst\" and \"dirs\""}
		}
		if err := f(i, &rt); err != nil {
			return err
		}
	}
}

// openJSONStream reads the header of a JSON table read from f (starting
// at offset start): every key but "routes", which the check reads later
// (one pass when "routes" is the last key, two otherwise).
func openJSONStream(f io.ReadSeeker, start int64, extraLinks, extraNodes string, own bool) (*TableReader, *Router, error) {
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return nil, nil, err
	}
	s := &jscan{br: bufio.NewReaderSize(f, 1<<16)}
	h, routesAt, err := scanJSONHeader(s)
	if err != nil {
		return nil, nil, fmt.Errorf("table file: not a valid table: %v", err)
	}
	r, err := routerForFile(h.Dims, h.Mesh, h.Rules, h.Order, h.FailedLinks, h.FailedNodes, extraLinks, extraNodes)
	if err != nil {
		return nil, nil, err
	}
	return &TableReader{r: r, own: own, f: f, start: start, jh: h, routesAt: routesAt}, r, nil
}

// jsonRoutes decodes the routes of a JSON table file, from the start of
// its "routes" every time it is called.
func (tr *TableReader) jsonRoutes(fn func(i int, rt *RouteJSON) error) error {
	if _, err := tr.f.Seek(tr.start+tr.routesAt, io.SeekStart); err != nil {
		return err
	}
	return eachJSONRoute(&jscan{br: bufio.NewReaderSize(tr.f, 1<<16)}, fn)
}

// parseRouteFast decodes a route object made of the keys "src", "dst"
// (lists of small non-negative integers) and "dirs" (list of plain
// strings) without reflection; anything else (escapes, other keys or
// types) makes it report false so that encoding/json decides.
func parseRouteFast(b []byte, rt *RouteJSON) bool {
	p := &routeParser{b: b}
	if !p.expect('{') {
		return false
	}
	seen := 0
	for k := 0; k < 3; k++ {
		if k > 0 && !p.expect(',') {
			return false
		}
		key, ok := p.plainString()
		if !ok || !p.expect(':') {
			return false
		}
		bit := 0
		switch key {
		case "src":
			bit = 1
		case "dst":
			bit = 2
		case "dirs":
			bit = 4
		}
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		switch key {
		case "src":
			rt.Src, ok = p.ints(rt.Src)
		case "dst":
			rt.Dst, ok = p.ints(rt.Dst)
		default:
			rt.Dirs, ok = p.dirs(rt.Dirs)
		}
		if !ok {
			return false
		}
	}
	if !p.expect('}') {
		return false
	}
	p.ws()
	return p.i == len(b) && seen == 7
}

// routeParser reads one route object for parseRouteFast.
type routeParser struct {
	b []byte
	i int
}

func (p *routeParser) ws() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\r' || p.b[p.i] == '\n') {
		p.i++
	}
}

func (p *routeParser) expect(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// plainString reads an ASCII string without escapes.
func (p *routeParser) plainString() (string, bool) {
	if !p.expect('"') {
		return "", false
	}
	j := p.i
	for p.i < len(p.b) && p.b[p.i] != '"' {
		if p.b[p.i] == '\\' || p.b[p.i] < 0x20 || p.b[p.i] >= 0x80 {
			return "", false
		}
		p.i++
	}
	if p.i >= len(p.b) {
		return "", false
	}
	s := string(p.b[j:p.i])
	p.i++
	return s, true
}

// list reads a JSON array whose elements item reads (after white space).
func (p *routeParser) list(item func() bool) bool {
	if !p.expect('[') {
		return false
	}
	if p.expect(']') {
		return true
	}
	for {
		p.ws()
		if !item() {
			return false
		}
		if p.expect(']') {
			return true
		}
		if !p.expect(',') {
			return false
		}
	}
}

// ints reads a list of non-negative integers of at most 9 digits.
func (p *routeParser) ints(out []int) ([]int, bool) {
	out = out[:0]
	ok := p.list(func() bool {
		j, x := p.i, 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' && p.i-j < 9 {
			x = x*10 + int(p.b[p.i]-'0')
			p.i++
		}
		if p.i == j || (p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9') || (p.b[j] == '0' && p.i-j > 1) {
			return false // empty, too long, or a leading zero
		}
		out = append(out, x)
		return true
	})
	if !ok {
		return nil, false
	}
	return out, true
}

// dirs reads a list of direction strings, interning the usual names.
func (p *routeParser) dirs(out []string) ([]string, bool) {
	out = out[:0]
	ok := p.list(func() bool {
		if p.i+4 <= len(p.b) && p.b[p.i] == '"' && p.b[p.i+3] == '"' && dirNames[string(p.b[p.i+1:p.i+3])] != "" {
			out = append(out, dirNames[string(p.b[p.i+1:p.i+3])])
			p.i += 4
			return true
		}
		s, ok := p.plainString()
		out = append(out, s)
		return ok
	})
	if !ok {
		return nil, false
	}
	return out, true
}

// dirNames interns the direction names of JSON routes.
var dirNames = func() map[string]string {
	m := map[string]string{}
	for d := Dir(0); d < 2*MaxDims; d++ {
		m[d.String()] = d.String()
	}
	return m
}()
