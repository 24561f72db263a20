package client

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

// TestJobJSON: the hand-written JSON of a job and of its table decodes to
// the same value as encoding/json's and reads back to the job, with and
// without failures and transit nodes; large tables stream in pieces.
func TestJobJSON(t *testing.T) {
	for _, tc := range []struct {
		spec, links, nodes string
		active, transit    []int
	}{
		{"torus:4x4x2", "", "", span(0, 32), nil},
		{"torus:5x4x3", "0.0.0+X", "", []int{0, 1, 2, 3, 4}, span(5, 40)},
		{"torus:4x4x4", "", "1.1.1", []int{0, 1, 2, 3}, span(4, 16)},
		{"torus:8x8x3", "", "", span(0, 160), nil}, // streamed in several pieces
	} {
		g, err := topology.Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		if g, err = g.ApplyFaults(tc.links, tc.nodes); err != nil {
			t.Fatal(err)
		}
		rule, _ := routing.ParseRule("angara*")
		r, err := routing.NewRouter(g, rule)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := r.BuildTable(tc.active, tc.transit, routing.BFS)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := tb.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		want, err := routing.ReadTableJSON(&buf)
		if err != nil {
			t.Fatal(err)
		}
		got := want
		all, _ := appendTableJSON(nil, got, nil)
		head := *got
		head.Routes = nil
		hb, _ := json.Marshal(&head)
		if est, exact := routesJSONSize(got.Routes), len(all)-len(hb)+len("null"); est < exact || est > exact+1 {
			t.Fatalf("%s: routes take %d bytes, estimated %d", tc.spec, exact, est)
		}
		j := &JobRecord{ID: 3, Name: "a\"<b>", State: "running", Active: []string{"0.0.0"}, Table: got,
			Created: time.Unix(5, 0).UTC(), Reachable: true}
		fast, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		direct, err := MarshalJSON(j)
		if err != nil || !bytes.Equal(direct, fast) {
			t.Fatalf("%s: marshalJSON is not compact, escaped JSON (%v)", tc.spec, err)
		}
		if tc.spec == "torus:8x8x3" && LargeTable(j, IndentLimit) == nil {
			t.Fatalf("the last case should be sent streamed: %d bytes", routesJSONSize(got.Routes))
		}
		for _, v := range []any{j, got} {
			var sb bytes.Buffer
			pieces := 0
			if err := StreamJSON(&sb, v, func() { pieces++ }); err != nil || pieces != 1 {
				t.Fatalf("%s: stream %T: %v (started %d times)", tc.spec, v, err, pieces)
			}
			whole, _ := MarshalJSON(v)
			if !bytes.Equal(sb.Bytes(), append(whole, '\n')) {
				t.Fatalf("%s: streamed %T differs from its JSON", tc.spec, v)
			}
		}
		slow, err := json.Marshal((*jobFields)(j))
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if err := json.Unmarshal(fast, &a); err != nil {
			t.Fatalf("%s: hand-written JSON invalid: %v", tc.spec, err)
		}
		json.Unmarshal(slow, &b)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: hand-written job JSON differs:\n%s\n%s", tc.spec, fast, slow)
		}
		var tw tableWire
		if err := json.Unmarshal(all, &tw); err != nil {
			t.Fatal(err)
		}
		if routes, ok := parseRoutes(tw.Routes); !ok || !reflect.DeepEqual(routes, want.Routes) {
			t.Fatalf("%s: the fast parser does not read the routes back (ok %v)", tc.spec, ok)
		}
		var ind bytes.Buffer
		json.Indent(&ind, fast, "", " ")
		for _, text := range [][]byte{fast, ind.Bytes()} { // the fast parser, encoding/json
			var back JobRecord
			if err := json.Unmarshal(text, &back); err != nil || !reflect.DeepEqual(back.Table, want) || !reflect.DeepEqual(&back, j) {
				t.Fatalf("%s: job JSON does not read back to the job (%v)", tc.spec, err)
			}
		}
	}
}

func span(a, b int) []int {
	var out []int
	for v := a; v < b; v++ {
		out = append(out, v)
	}
	return out
}
