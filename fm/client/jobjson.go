package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/icn-hpc/icn/routing"
)

// flushFunc takes the bytes encoded so far and returns the buffer to go
// on with (streaming); nil means keep appending.
type flushFunc func(b []byte) ([]byte, error)

// jobFields is JobRecord without its methods (for MarshalJSON).
type jobFields JobRecord

// MarshalJSON encodes a job as encoding/json would, with the routing
// table written by routing.AppendTableJSON (placed last among the keys).
func (j *JobRecord) MarshalJSON() ([]byte, error) {
	c := jobFields(*j)
	c.Table = nil
	b, err := json.Marshal(&c)
	if err != nil || j.Table == nil {
		return b, err
	}
	out := make([]byte, 0, len(b)+len(`,"table":`)+routing.RoutesJSONSize(j.Table.Routes)+4096)
	return appendJobTable(out, b, j.Table, nil)
}

// appendJobTable appends a job encoded without its table (fields) with
// the table added as its last key.
func appendJobTable(out, fields []byte, tf *routing.TableJSON, flush flushFunc) ([]byte, error) {
	out = append(out, fields[:len(fields)-1]...)
	out = append(out, `,"table":`...)
	out, err := routing.AppendTableJSON(out, tf, flush)
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
	if tf == nil || routing.RoutesJSONSize(tf.Routes) <= limit {
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
		buf, err = routing.AppendTableJSON(buf, x, flush)
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
			return routing.AppendTableJSON(make([]byte, 0, routing.RoutesJSONSize(x.Routes)+4096), x, nil)
		}
	}
	return json.Marshal(v)
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
		routes, ok := routing.ParseRoutesJSON(tw.Routes)
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
