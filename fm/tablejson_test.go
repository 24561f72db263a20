package fm

import (
	"bytes"
	"context"
	"reflect"
	"testing"

	"github.com/icn-hpc/icn/internal/tabletest"
	"github.com/icn-hpc/icn/routing"
)

// TestTableJSONMatchesFileRoundTrip: the table built in memory
// (routing.Table.JSON) equals the one written by Table.WriteJSON and read
// back, with and without failures and transit nodes (its JSON: fm/client's
// TestJobJSON).
func TestTableJSONMatchesFileRoundTrip(t *testing.T) {
	for _, tc := range tabletest.Cases(t) {
		want, tb := tc.File, tc.Table
		got, err := tb.JSON(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: direct table differs from the file round trip:\n%+v\n%+v", tc.Spec, got, want)
		}
	}
}

// TestTableEncodedMatchesEncodeRoutes: a table encoded straight from the
// routing table (tableEncoded) has the header and the stored routes of
// the table in the file format (its header, and routing.EncodeStoredRoutes of
// its routes), on the cases of the file round trip.
func TestTableEncodedMatchesEncodeRoutes(t *testing.T) {
	for _, tc := range tabletest.Cases(t) {
		full, err := tc.Table.JSON(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want, err := routing.EncodeStoredRoutes(full)
		if err != nil {
			t.Fatal(err)
		}
		head, routes, err := tableEncoded(context.Background(), tc.Table)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(routes, want) {
			t.Errorf("%s: %d bytes encoded from the routing table, %d from the file format", tc.Spec, len(routes), len(want))
		}
		full.Routes = nil
		if !reflect.DeepEqual(head, full) {
			t.Errorf("%s: header %+v, want %+v", tc.Spec, head, full)
		}
	}
}
