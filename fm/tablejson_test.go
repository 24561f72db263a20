package fm

import (
	"reflect"
	"testing"

	"github.com/icn-hpc/icn/internal/tabletest"
)

// TestTableJSONMatchesFileRoundTrip: the table built in memory equals the
// one written by Table.WriteJSON and read back, with and without failures
// and transit nodes (its JSON: fm/client's TestJobJSON).
func TestTableJSONMatchesFileRoundTrip(t *testing.T) {
	for _, tc := range tabletest.Cases(t) {
		want, tb := tc.File, tc.Table
		got := tableJSON(tb)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: direct table differs from the file round trip:\n%+v\n%+v", tc.Spec, got, want)
		}
	}
}
