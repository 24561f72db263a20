package store

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/routing"
)

// A job's routes are stored apart from its record, in the tables bucket,
// in routing's stored form (routing.EncodeStoredRoutes); the record keeps
// the table's header (nodes, rule, figures), and Job reads both back into
// one routing.TableJSON.

var errNoRoutes = errors.New("its routes are missing from the tables bucket")

// routesV2Schema is the first schema whose routes are written in version 2
// of the stored form; those before it hold version 1.
const routesV2Schema = 5

// routesV3Schema is the first schema that may hold routes in version 3.
const routesV3Schema = 6

// routesVersion is the latest version of the stored form an icn of the
// given schema reads.
func routesVersion(schema uint64) int {
	switch {
	case schema < routesV2Schema:
		return 1
	case schema < routesV3Schema:
		return 2
	}
	return 3
}

// recodeRoutes writes every job's routes stored in version 1 of routing's
// stored form again in version 2 (routing.RecodeStoredRoutes; migration
// to schema 5), with their link loads tied to the new routes.
func (t *Tx) recodeRoutes() error {
	var jobs []*client.JobRecord
	err := t.Jobs(false, func(j *client.JobRecord) error {
		if j.Table != nil {
			jobs = append(jobs, j)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, j := range jobs {
		key := u64(uint64(j.ID))
		old, sum, err := t.storedRoutesSum(j)
		if err != nil {
			return fmt.Errorf("job %d: %v", j.ID, err)
		}
		routes, err := routing.RecodeStoredRoutes(old, j.Table, 2)
		if err != nil {
			return fmt.Errorf("job %d: %v", j.ID, err)
		}
		if string(routes) == string(old) {
			continue
		}
		l, _, tied, err := t.jobLoads(key, sum)
		if err != nil {
			return fmt.Errorf("job %d: %v", j.ID, err)
		}
		framed := frameRecord(routes)
		if err := t.kv.Put(bTables, key, framed); err != nil {
			return err
		}
		if !tied {
			continue
		}
		b, err := encodeLoads(binary.BigEndian.Uint32(framed[1:5]), l)
		if err != nil {
			return fmt.Errorf("job %d: link loads: %v", j.ID, err)
		}
		if err := t.kv.Put(bLoads, key, frameRecord(b)); err != nil {
			return err
		}
	}
	return nil
}
