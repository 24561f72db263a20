package routing

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"
)

// The compact JSON of a table is encoding/json's, its size is what
// RoutesJSONSize says, and ParseRoutesJSON reads the routes back; text
// in another form is left to encoding/json.
func TestTableWireRoundTrip(t *testing.T) {
	g := mustTorus(t, "4x4x2")
	r := mustRouter(t, g, AngaraStar)
	nodes, err := g.ParseNodes("0-3.0-1.*")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := r.Build(context.Background(), nodes[:12], nodes[12:], BuildOptions{Algo: BFS})
	if err != nil {
		t.Fatal(err)
	}
	tf, err := tb.JSON(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var pieces [][]byte
	fast, err := AppendTableJSON(nil, tf, func(b []byte) ([]byte, error) {
		pieces = append(pieces, bytes.Clone(b))
		return b[:0], nil
	})
	if err != nil {
		t.Fatal(err)
	}
	whole := append(bytes.Join(pieces, nil), fast...)
	slow, err := json.Marshal(tf)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(whole, slow) {
		t.Fatalf("hand-written table JSON differs from encoding/json's:\n%.300s\n%.300s", whole, slow)
	}
	var w struct {
		Routes json.RawMessage `json:"routes"`
	}
	if err := json.Unmarshal(whole, &w); err != nil {
		t.Fatal(err)
	}
	if got := RoutesJSONSize(tf.Routes); got != len(w.Routes) && got != len(w.Routes)+1 {
		t.Fatalf("routes take %d bytes, RoutesJSONSize says %d", len(w.Routes), got)
	}
	routes, ok := ParseRoutesJSON(w.Routes)
	if !ok || !reflect.DeepEqual(routes, tf.Routes) {
		t.Fatalf("routes not read back (ok %v)", ok)
	}
	var ind bytes.Buffer
	json.Indent(&ind, w.Routes, "", " ")
	if _, ok := ParseRoutesJSON(ind.Bytes()); ok {
		t.Fatal("indented routes taken by the compact parser")
	}
}
