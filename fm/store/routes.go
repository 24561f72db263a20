package store

import (
	"errors"
)

// A job's routes are stored apart from its record, in the tables bucket,
// in routing's stored form (routing.EncodeStoredRoutes); the record keeps
// the table's header (nodes, rule, figures), and Job reads both back into
// one routing.TableJSON.

var errNoRoutes = errors.New("its routes are missing from the tables bucket")
