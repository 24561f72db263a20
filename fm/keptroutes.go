package fm

import (
	"fmt"

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/routing"
)

// A running job's table is kept in memory as the store keeps it: the
// record's Table holds the header (nodes, rule, figures) without routes
// and StoredRoutes the routes encoded (routing.EncodeStoredRoutes: about 7 bytes
// a route, against 72 decoded), so a 98 304-node torus 60 % full holds
// its tables in hundreds of megabytes, not gigabytes, and a start reads
// them without decoding them. Routes are decoded only where one is
// needed: a table verified again after a failure (the jobs the change
// reaches), POST /api/jobs/{id}/verify, GET /api/jobs/{id} and its
// routes. The link loads are counted from the encoded routes.

// keepEncoded keeps j's table encoded: routes are its table's routes as
// routing.EncodeStoredRoutes wrote them. j and its table must not be shared yet
// (a new placement, migration or table); nothing is done without
// routes.
func keepEncoded(j *client.JobRecord, routes []byte) {
	if j.Table == nil || routes == nil {
		return
	}
	j.StoredRoutes = routes
	j.Table.Routes = nil
}

// encodedRoutes returns the encoded routes of j's table when it is kept
// encoded, else nil (its table has its routes, or none).
func encodedRoutes(j *client.JobRecord) []byte {
	if j.Table == nil || j.Table.Routes != nil {
		return nil
	}
	return j.StoredRoutes
}

// fullTable returns j's table with its routes: decoded into a copy when
// it is kept encoded.
func fullTable(j *client.JobRecord) (*routing.TableJSON, error) {
	routes := encodedRoutes(j)
	if routes == nil {
		return j.Table, nil
	}
	tf := *j.Table
	if err := routing.DecodeStoredRoutes(routes, &tf); err != nil {
		return nil, fmt.Errorf("job %d: %v", j.ID, err)
	}
	return &tf, nil
}
