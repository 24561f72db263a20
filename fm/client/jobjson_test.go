package client

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/icn-hpc/icn/internal/tabletest"
	"github.com/icn-hpc/icn/routing"
)

// TestJobJSON: the hand-written JSON of a job and of its table decodes to
// the same value as encoding/json's and reads back to the job, with and
// without failures and transit nodes; large tables stream in pieces.
func TestJobJSON(t *testing.T) {
	for _, tc := range tabletest.Cases(t) {
		want := tc.File
		got := want
		all, _ := routing.AppendTableJSON(nil, got, nil)
		head := *got
		head.Routes = nil
		hb, _ := json.Marshal(&head)
		if est, exact := routing.RoutesJSONSize(got.Routes), len(all)-len(hb)+len("null"); est < exact || est > exact+1 {
			t.Fatalf("%s: routes take %d bytes, estimated %d", tc.Spec, exact, est)
		}
		j := &JobRecord{ID: 3, Name: "a\"<b>", State: "running", Active: []string{"0.0.0"}, Table: got,
			Created: time.Unix(5, 0).UTC(), Reachable: true}
		fast, err := json.Marshal(j)
		if err != nil {
			t.Fatal(err)
		}
		direct, err := MarshalJSON(j)
		if err != nil || !bytes.Equal(direct, fast) {
			t.Fatalf("%s: marshalJSON is not compact, escaped JSON (%v)", tc.Spec, err)
		}
		if tc.Large && LargeTable(j, IndentLimit) == nil {
			t.Fatalf("the last case should be sent streamed: %d bytes", routing.RoutesJSONSize(got.Routes))
		}
		for _, v := range []any{j, got} {
			var sb bytes.Buffer
			pieces := 0
			if err := StreamJSON(&sb, v, func() { pieces++ }); err != nil || pieces != 1 {
				t.Fatalf("%s: stream %T: %v (started %d times)", tc.Spec, v, err, pieces)
			}
			whole, _ := MarshalJSON(v)
			if !bytes.Equal(sb.Bytes(), append(whole, '\n')) {
				t.Fatalf("%s: streamed %T differs from its JSON", tc.Spec, v)
			}
		}
		slow, err := json.Marshal((*jobFields)(j))
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if err := json.Unmarshal(fast, &a); err != nil {
			t.Fatalf("%s: hand-written JSON invalid: %v", tc.Spec, err)
		}
		json.Unmarshal(slow, &b)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: hand-written job JSON differs:\n%s\n%s", tc.Spec, fast, slow)
		}
		var tw tableWire
		if err := json.Unmarshal(all, &tw); err != nil {
			t.Fatal(err)
		}
		if routes, ok := routing.ParseRoutesJSON(tw.Routes); !ok || !reflect.DeepEqual(routes, want.Routes) {
			t.Fatalf("%s: the fast parser does not read the routes back (ok %v)", tc.Spec, ok)
		}
		var ind bytes.Buffer
		json.Indent(&ind, fast, "", " ")
		for _, text := range [][]byte{fast, ind.Bytes()} { // the fast parser, encoding/json
			var back JobRecord
			if err := json.Unmarshal(text, &back); err != nil || !reflect.DeepEqual(back.Table, want) || !reflect.DeepEqual(&back, j) {
				t.Fatalf("%s: job JSON does not read back to the job (%v)", tc.Spec, err)
			}
		}
	}
}
