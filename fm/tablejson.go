package fm

import (
	"context"

	"github.com/icn-hpc/icn/routing"
)

// tableEncoded returns tb in the file format without its routes and its
// routes encoded as the store keeps them (routing.EncodeStoredTable): a
// job's table as the service keeps it (keepEncoded), made without the
// routes of the file format.
func tableEncoded(ctx context.Context, tb *routing.Table) (*routing.TableJSON, []byte, error) {
	routes, err := routing.EncodeStoredTable(ctx, tb)
	if err != nil {
		return nil, nil, err
	}
	return tb.JSONHeader(), routes, nil
}
