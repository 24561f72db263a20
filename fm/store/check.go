package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/routing"
)

// checkRecords checks every record of every bucket, the same way on
// both backends: the meta bucket (magic, schema, its checksum, the form
// of its values), then each record's checksum and decoding and the
// relations between records: keys match ids, no job id at or above the
// next id in meta (a new job would overwrite it), every stored table
// belongs to a job with a table and every such job has one, stored link
// loads belong to a job's stored routes (their checksum), no audit
// entry beyond the audit sequence (the next entry would overwrite it).
//
// With tied (a service's start), the routes of a job whose stored link
// loads are tied to them are not walked: the loads were stored from
// routes that routing's encoder made or that passed this check, and the
// checksum says these are the same bytes. The full check (Check,
// CheckFile) walks every route.
func checkRecords(kv kvTx, tied bool) error {
	schema, err := checkMeta(kv)
	if err != nil {
		return err
	}
	legacy := schema == 1
	nextJob, err := readNextJob(kv)
	if err != nil {
		return err
	}
	if v, err := kv.Get(bFabric, kCurrent); err != nil {
		return err
	} else if v != nil {
		var f FabricRecord
		data, err := unframeRecord(v, legacy)
		if err == nil {
			err = json.Unmarshal(data, &f)
		}
		if err != nil {
			return fmt.Errorf("fabric record: %v", err)
		}
	}
	if err := checkJobRecords(kv, schema, nextJob, tied); err != nil {
		return err
	}
	if err := checkBucket(kv, bGroups, "group", legacy, func(k, data []byte) error {
		var g client.GroupRecord
		if err := json.Unmarshal(data, &g); err != nil {
			return err
		}
		if string(k) != g.ID {
			return fmt.Errorf("key does not match id %q", g.ID)
		}
		return nil
	}); err != nil {
		return err
	}
	seq, err := kv.Sequence(bAudit)
	if err != nil {
		return err
	}
	if err := checkBucket(kv, bAudit, "audit entry", legacy, func(k, data []byte) error {
		var e client.Event
		if err := json.Unmarshal(data, &e); err != nil {
			return err
		}
		if len(k) != 8 || binary.BigEndian.Uint64(k) != e.Seq {
			return fmt.Errorf("key does not match seq %d", e.Seq)
		}
		if e.Seq > seq {
			return fmt.Errorf("seq %d beyond the audit sequence %d: the next entry would overwrite it", e.Seq, seq)
		}
		return nil
	}); err != nil {
		return err
	}
	if schema >= 3 {
		return checkBucket(kv, bRequests, "request", false, func(k, data []byte) error {
			var o Outcome
			return json.Unmarshal(data, &o)
		})
	}
	return nil
}

// checkJobRecords checks the jobs, their stored routes and their stored
// link loads (see checkRecords).
func checkJobRecords(kv kvTx, schema, nextJob uint64, tied bool) error {
	legacy := schema == 1
	withTable := map[int]bool{}
	sums := map[int]uint32{} // the checksum of each job's stored routes
	t := &Tx{kv: kv, legacy: legacy, schema: schema}
	if err := checkBucket(kv, bJobs, "job", legacy, func(k, data []byte) error {
		var j client.JobRecord
		if err := j.UnmarshalJSON(data); err != nil { // one pass less than json.Unmarshal
			return err
		}
		if len(k) != 8 || binary.BigEndian.Uint64(k) != uint64(j.ID) {
			return fmt.Errorf("key does not match id %d", j.ID)
		}
		if uint64(j.ID) >= nextJob {
			return fmt.Errorf("id %d is not below the next job id %d in meta: a new job would overwrite it", j.ID, nextJob)
		}
		if !legacy && j.Table != nil {
			withTable[j.ID] = true
			data, sum, err := t.storedRoutesSum(&j)
			if err != nil {
				return err
			}
			sums[j.ID] = sum
			if tied {
				if _, _, ok, err := t.jobLoads(k, sum); err == nil && ok {
					return nil
				}
			}
			return routing.CheckStoredRoutes(data, j.Table)
		}
		return nil
	}); err != nil {
		return err
	}
	if !legacy {
		if err := checkBucket(kv, bTables, "routes of job", false, func(k, _ []byte) error {
			if len(k) != 8 || !withTable[int(binary.BigEndian.Uint64(k))] {
				return fmt.Errorf("no stored job with a table owns them")
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if schema >= loadsSchema {
		if err := checkBucket(kv, bLoads, "link loads of job", false, func(k, data []byte) error {
			sum, ok := uint32(0), false
			if len(k) == 8 {
				sum, ok = sums[int(binary.BigEndian.Uint64(k))]
			}
			if !ok {
				return fmt.Errorf("no stored job with a table owns them")
			}
			got, _, err := decodeLoads(data)
			if err != nil {
				return err
			}
			if got != sum {
				return fmt.Errorf("counted from routes of checksum %08x, the stored routes' is %08x", got, sum)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// checkBucket checks every record of a bucket: its checksum (bare JSON
// only in a schema 1 store), then fn on its JSON.
func checkBucket(kv kvTx, bucket []byte, what string, legacy bool, fn func(k, data []byte) error) error {
	return kv.ForEach(bucket, nil, func(k, v []byte) error {
		data, err := unframeRecord(v, legacy)
		if err == nil {
			err = fn(k, data)
		}
		if err != nil {
			return fmt.Errorf("%s %s: %v", what, keyName(k), err)
		}
		return nil
	})
}

// Check runs every record check (checkRecords) on the open store as it
// is now, reading only; on a bbolt file also bbolt's own page check
// (CheckFile checks a file no process holds, its pages first).
func (s *Store) Check(ctx context.Context) error {
	_, err := s.View(ctx, func(t *Tx) error {
		if err := checkRecords(t.kv, false); err != nil {
			return err
		}
		var first error
		if b, ok := t.kv.(*boltKV); ok {
			// Drained to the end, so that the checking goroutine ends.
			for err := range b.tx.Check() {
				if first == nil {
					first = err
				}
			}
		}
		return first
	})
	if errors.Is(err, ErrForeign) || errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("%s: %w", s.Name(), err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w: %v; nothing was written", s.Name(), ErrDamaged, err)
	}
	return nil
}
