package store

import (
	"bytes"
	"context"
	"fmt"
	"time"
)

// record is one key and value of a bucket.
type record struct {
	bucket, key, value []byte
}

// Copy copies every record of from into to, a store just created and
// still empty (a new bbolt file from OpenBolt, or an etcd prefix that
// OpenEtcdStore found empty), the meta bucket last so that a copy cut
// short is never taken for a store; then it checks to as a start would.
// from is read in one snapshot and must be of the current schema (a
// service migrates an older bbolt file when it opens it). On etcd, the
// copy takes the leadership of the new prefix while it writes (no
// instance may serve it meanwhile), and values too large for one request
// are written in chunks. It returns how many records it copied.
func Copy(ctx context.Context, from, to *Store) (int, error) {
	if from.schema != schemaVersion {
		return 0, fmt.Errorf("%s has schema %d: start icn serve on it once (it is migrated to schema %d), then copy", from.Name(), from.schema, schemaVersion)
	}
	var recs, meta []record
	seqs := map[string]uint64{}
	_, err := from.View(ctx, func(t *Tx) error {
		if err := checkRecords(t.kv, false); err != nil {
			return fmt.Errorf("%s: %w: %v", from.Name(), ErrDamaged, err)
		}
		for _, b := range append(storeBuckets(schemaVersion), bMeta) {
			if err := t.kv.ForEach(b, nil, func(k, v []byte) error {
				r := record{bucket: b, key: bytes.Clone(k), value: bytes.Clone(v)}
				if bytes.Equal(b, bMeta) {
					meta = append(meta, r)
				} else {
					recs = append(recs, r)
				}
				return nil
			}); err != nil {
				return err
			}
		}
		n, err := t.kv.Sequence(bAudit)
		seqs[string(bAudit)] = n
		return err
	})
	if err != nil {
		return 0, err
	}
	if to.etcd != nil {
		err = copyToEtcd(ctx, to.etcd, recs, meta, seqs)
	} else {
		err = copyToBolt(ctx, to.bolt, recs, meta, seqs)
	}
	if err != nil {
		return 0, fmt.Errorf("copying to %s: %v", to.Name(), err)
	}
	to.schema = schemaVersion
	if err := to.Check(ctx); err != nil {
		return 0, fmt.Errorf("the copy does not pass the check: %v", err)
	}
	return len(recs) + len(meta), nil
}

func copyToBolt(ctx context.Context, b *Bolt, recs, meta []record, seqs map[string]uint64) error {
	_, err := b.update(ctx, func(kv kvTx) error {
		for _, r := range recs {
			if err := kv.Put(r.bucket, r.key, r.value); err != nil {
				return err
			}
		}
		for bucket, n := range seqs {
			if err := kv.SetSequence([]byte(bucket), n); err != nil {
				return err
			}
		}
		// The meta bucket exactly as it was: what the new file wrote
		// goes first.
		var mine [][]byte
		kv.ForEach(bMeta, nil, func(k, v []byte) error { mine = append(mine, bytes.Clone(k)); return nil })
		for _, k := range mine {
			if err := kv.Delete(bMeta, k); err != nil {
				return err
			}
		}
		for _, r := range meta {
			if err := kv.Put(bMeta, r.key, r.value); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}

func copyToEtcd(ctx context.Context, e *Etcd, recs, meta []record, seqs map[string]uint64) error {
	l, err := e.Campaign(ctx, []byte(`{"name":"icn serve store copy"}`), 10*time.Second)
	if err != nil {
		return err
	}
	defer func() {
		e.Unlead()
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		l.Resign(rctx)
		cancel()
	}()
	if _, err := e.Lead(ctx, l); err != nil {
		return err
	}
	// Batches within the cluster's limits (the sequence and the commit
	// marker take two operations of the last one).
	maxOps, maxBytes := e.cfg.MaxTxnOps-2, e.cfg.MaxRequestBytes*3/4
	write := func(batch []record, last bool) error {
		_, err := e.update(ctx, func(kv kvTx) error {
			for _, r := range batch {
				if err := kv.Put(r.bucket, r.key, r.value); err != nil {
					return err
				}
			}
			if last {
				for bucket, n := range seqs {
					if err := kv.SetSequence([]byte(bucket), n); err != nil {
						return err
					}
				}
			}
			return nil
		})
		return err
	}
	var batch []record
	size := 0
	for _, r := range recs {
		n := len(r.key) + len(r.value) + 64
		if blobBuckets[string(r.bucket)] && len(r.value) > inlineMax {
			n = 256 // a reference
		}
		if len(batch) > 0 && (len(batch) >= maxOps || size+n > maxBytes) {
			if err := write(batch, false); err != nil {
				return err
			}
			batch, size = nil, 0
		}
		batch, size = append(batch, r), size+n
	}
	if len(batch) > 0 {
		if err := write(batch, false); err != nil {
			return err
		}
	}
	return write(meta, true)
}
