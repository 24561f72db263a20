package fm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"
	"github.com/icn-hpc/icn/routing"

	bolt "go.etcd.io/bbolt"
)

// storeWithJobs builds a database with three running jobs (one with
// transit nodes), closes it and returns its path and bytes.
func storeWithJobs(t *testing.T) (string, []byte) {
	t.Helper()
	dir := t.TempDir()
	s, _ := openTest(t, dir, "torus:4x4x4", nil)
	for _, req := range []client.JobRequest{{Nodes: 4}, {Nodes: 6, Transit: 2}, {Nodes: 3}} {
		if _, err := s.Submit("test", req); err != nil {
			t.Fatal(err)
		}
	}
	return closedStore(t, s, dir)
}

// editStore applies edit to a copy of a database through bbolt (as a
// tool that knows the format would) and returns the copy's path and
// bytes.
func editStore(t *testing.T, orig []byte, edit func(tx *bolt.Tx) error) (string, []byte) {
	t.Helper()
	q := filepath.Join(t.TempDir(), "fm.db")
	if err := os.WriteFile(q, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(q, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(edit); err != nil {
		t.Fatal(err)
	}
	db.Close()
	b, err := os.ReadFile(q)
	if err != nil {
		t.Fatal(err)
	}
	return q, b
}

// jobJSON returns the JSON of job id (a framed record).
func jobJSON(t *testing.T, tx *bolt.Tx, id uint64) []byte {
	t.Helper()
	data, err := unframeRecord(tx.Bucket(bJobs).Get(u64(id)), false)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(data)
}

// TestAlteredStoresRefused alters records of a database into other valid
// JSON or into records that contradict each other: Check and Open refuse
// each with one line naming the record, and neither modifies the file.
func TestAlteredStoresRefused(t *testing.T) {
	_, orig := storeWithJobs(t)
	cases := []struct {
		name, want string
		edit       func(t *testing.T, tx *bolt.Tx) error
	}{
		{"a key renamed inside a job, checksum kept", "checksum mismatch", func(t *testing.T, tx *bolt.Tx) error {
			v := bytes.Clone(tx.Bucket(bJobs).Get(u64(1)))
			i := bytes.Index(v, []byte(`"rules":`))
			if i < 0 {
				t.Fatal("no rules key")
			}
			copy(v[i:], `"rulez":`)
			return tx.Bucket(bJobs).Put(u64(1), v)
		}},
		{"a node moved by one bit, checksum kept", "checksum mismatch", func(t *testing.T, tx *bolt.Tx) error {
			v := bytes.Clone(tx.Bucket(bJobs).Get(u64(2)))
			i := bytes.Index(v, []byte(`"active":["`))
			v[i+len(`"active":["`)] ^= 1 // 0 ↔ 1, 2 ↔ 3
			return tx.Bucket(bJobs).Put(u64(2), v)
		}},
		{"two jobs share a node, checksums valid", "job 2: node", func(t *testing.T, tx *bolt.Tx) error {
			var j1, j2 map[string]any
			json.Unmarshal(jobJSON(t, tx, 1), &j1)
			json.Unmarshal(jobJSON(t, tx, 2), &j2)
			a2 := j2["active"].([]any)
			a2[0] = j1["active"].([]any)[0]
			delete(j2, "table") // else the table check finds it first
			if err := tx.Bucket(bTables).Delete(u64(2)); err != nil {
				return err
			}
			if err := tx.Bucket(bLoads).Delete(u64(2)); err != nil {
				return err
			}
			data, _ := json.Marshal(j2)
			return tx.Bucket(bJobs).Put(u64(2), frameRecord(data))
		}},
		{"table of other nodes than the job's, checksums valid", "routing table", func(t *testing.T, tx *bolt.Tx) error {
			var j1, j3 map[string]any
			json.Unmarshal(jobJSON(t, tx, 1), &j1)
			json.Unmarshal(jobJSON(t, tx, 3), &j3)
			j3["table"] = j1["table"]
			data, _ := json.Marshal(j3)
			return tx.Bucket(bJobs).Put(u64(3), frameRecord(data))
		}},
		{"a job stored as bare JSON", "job 1: not a framed record", func(t *testing.T, tx *bolt.Tx) error {
			return tx.Bucket(bJobs).Put(u64(1), jobJSON(t, tx, 1))
		}},
		{"a step of a job's routes flipped, checksum kept", "routes: checksum mismatch", func(t *testing.T, tx *bolt.Tx) error {
			v := bytes.Clone(tx.Bucket(bTables).Get(u64(2)))
			v[len(v)-1] ^= 0x10
			return tx.Bucket(bTables).Put(u64(2), v)
		}},
		{"routes without their job", "routes of job 9: no stored job with a table owns them", func(t *testing.T, tx *bolt.Tx) error {
			return tx.Bucket(bTables).Put(u64(9), tx.Bucket(bTables).Get(u64(1)))
		}},
		{"link loads without their job", "link loads of job 9: no stored job with a table owns them", func(t *testing.T, tx *bolt.Tx) error {
			return tx.Bucket(bLoads).Put(u64(9), tx.Bucket(bLoads).Get(u64(1)))
		}},
		{"link loads of other routes, checksums valid", "link loads of job 1: counted from routes of checksum", func(t *testing.T, tx *bolt.Tx) error {
			v := tx.Bucket(bLoads).Get(u64(2))
			if v == nil {
				t.Fatal("job 2 has no stored link loads")
			}
			data := bytes.Clone(v[5:])
			copy(data[1:5], tx.Bucket(bTables).Get(u64(2))[1:5])
			if slices.Equal(tx.Bucket(bTables).Get(u64(1))[1:5], data[1:5]) {
				t.Fatal("jobs 1 and 2 have routes of one checksum")
			}
			return tx.Bucket(bLoads).Put(u64(1), frameRecord(data))
		}},
		{"a bit of link loads flipped, checksum kept", "link loads of job 2: checksum mismatch", func(t *testing.T, tx *bolt.Tx) error {
			v := bytes.Clone(tx.Bucket(bLoads).Get(u64(2)))
			v[len(v)-1] ^= 0x01
			return tx.Bucket(bLoads).Put(u64(2), v)
		}},
		{"next job id below a stored job, meta checksums recomputed", "next job id", func(t *testing.T, tx *bolt.Tx) error {
			if err := tx.Bucket(bMeta).Put(kNextJob, u64(2)); err != nil {
				return err
			}
			return putMetaSums(tx.Bucket(bMeta))
		}},
		{"a bit of next_job flipped, checksum kept", "meta next_job: checksum mismatch", func(t *testing.T, tx *bolt.Tx) error {
			return flipMeta(tx, kNextJob, 0, 0x01) // 4 → 2^56 + 4
		}},
		{"a bit of token_sha256 flipped, checksum kept", "meta token_sha256: checksum mismatch", func(t *testing.T, tx *bolt.Tx) error {
			return flipMeta(tx, kToken, 31, 0x80)
		}},
		{"a bit of schema flipped (3 to 1), checksum kept", "meta schema: checksum mismatch", func(t *testing.T, tx *bolt.Tx) error {
			return flipMeta(tx, kVersion, 7, 0x02)
		}},
		{"a bit of created flipped, checksum kept", "meta created: checksum mismatch", func(t *testing.T, tx *bolt.Tx) error {
			return flipMeta(tx, kCreated, 6, 0x01) // the month
		}},
		{"next job id 2^53, meta checksums recomputed", "meta next_job: the next job id 9007199254740992 is outside 1..9007199254740991", func(t *testing.T, tx *bolt.Tx) error {
			if err := tx.Bucket(bMeta).Put(kNextJob, u64(1<<53)); err != nil {
				return err
			}
			return putMetaSums(tx.Bucket(bMeta))
		}},
		{"next_job renamed next_jov", "meta next_jov: a key without a checksum", func(t *testing.T, tx *bolt.Tx) error {
			m := tx.Bucket(bMeta)
			if err := m.Put([]byte("next_jov"), bytes.Clone(m.Get(kNextJob))); err != nil {
				return err
			}
			return m.Delete(kNextJob)
		}},
		{"created deleted", "meta created: missing", func(t *testing.T, tx *bolt.Tx) error {
			return tx.Bucket(bMeta).Delete(kCreated)
		}},
		{"meta checksum record altered", "meta crc32c: the checksum record was altered", func(t *testing.T, tx *bolt.Tx) error {
			return flipMeta(tx, kMetaSum, 0, 0x01)
		}},
		{"meta checksum record deleted", "meta schema: the store claims schema 6 but has no meta checksums", func(t *testing.T, tx *bolt.Tx) error {
			return tx.Bucket(bMeta).Delete(kMetaSum)
		}},
		{"schema 2 store (no meta checksums) with next job id 2^56 + 4", "meta next_job: the next job id 72057594037927940 is outside", func(t *testing.T, tx *bolt.Tx) error {
			if err := toSchema2(tx); err != nil {
				return err
			}
			return flipMeta(tx, kNextJob, 0, 0x01)
		}},
		{"fabric record altered, checksum kept", "fabric record: checksum mismatch", func(t *testing.T, tx *bolt.Tx) error {
			v := bytes.Clone(tx.Bucket(bFabric).Get(kCurrent))
			i := bytes.Index(v, []byte("4x4x4"))
			v[i] = '3'
			return tx.Bucket(bFabric).Put(kCurrent, v)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, bad := editStore(t, orig, func(tx *bolt.Tx) error { return tc.edit(t, tx) })
			os.WriteFile(TokenFile(q), []byte("x\n"), 0o600)
			sum := sha256.Sum256(bad)
			cfg := Config{DBPath: q, NewRouting: AngaraRouting("angara*")}
			checkErr := Check(cfg)
			if checkErr == nil || !strings.Contains(checkErr.Error(), tc.want) || strings.Contains(checkErr.Error(), "\n") {
				t.Errorf("check: %v, want one line with %q", checkErr, tc.want)
			}
			s, _, openErr := Open(cfg)
			if openErr == nil {
				s.Close()
				t.Fatal("altered database opened")
			}
			if !strings.Contains(openErr.Error(), tc.want) {
				t.Errorf("open: %v, want %q", openErr, tc.want)
			}
			t.Log(openErr)
			if after, _ := os.ReadFile(q); sha256.Sum256(after) != sum {
				t.Error("the refused file was modified")
			}
		})
	}
}

// flipMeta flips bits of byte i of the meta value of key (its checksum
// left as it was).
func flipMeta(tx *bolt.Tx, key []byte, i int, bits byte) error {
	v := bytes.Clone(tx.Bucket(bMeta).Get(key))
	v[i] ^= bits
	return tx.Bucket(bMeta).Put(key, v)
}

// toSchema2 makes a store what schema 2 wrote: no meta checksums, no
// requests bucket.
func toSchema2(tx *bolt.Tx) error {
	if err := tx.Bucket(bMeta).Delete(kMetaSum); err != nil {
		return err
	}
	if err := tx.DeleteBucket(bRequests); err != nil {
		return err
	}
	return tx.Bucket(bMeta).Put(kVersion, u64(2))
}

// TestSchema2Migrated: a database of schema 2 (no meta checksums) passes
// the check unchanged, and Open serves it after adding the checksums of
// its meta values in one transaction; every later write keeps them.
func TestSchema2Migrated(t *testing.T) {
	_, orig := storeWithJobs(t)
	q, old := editStore(t, orig, toSchema2)
	cfg := Config{DBPath: q, NewRouting: AngaraRouting("angara*")}
	if err := Check(cfg); err != nil {
		t.Fatalf("schema 2 store: %v", err)
	}
	if after, _ := os.ReadFile(q); !bytes.Equal(after, old) {
		t.Fatal("the check modified the file")
	}
	s, _, err := Open(Config{DBPath: q, NewRouting: AngaraRouting("angara*"), RotateToken: true})
	if err != nil {
		t.Fatal(err)
	}
	if jobs, _ := s.Jobs(false); len(jobs) != 3 {
		t.Fatalf("%d jobs after the migration", len(jobs))
	}
	j, err := s.Submit("t", client.JobRequest{Nodes: 2}) // writes next_job
	if err != nil || j.ID != 4 {
		t.Fatalf("submit after the migration: %+v %v", j, err)
	}
	s.Close()
	if err := Check(cfg); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(q, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		m := tx.Bucket(bMeta)
		if v, _ := storeSchema(m); v != schemaVersion || m.Get(kMetaSum) == nil {
			t.Errorf("schema %d after Open, checksums %x", v, m.Get(kMetaSum))
		}
		if err := checkMetaSums(m); err != nil {
			t.Error(err)
		}
		return nil
	})
}

// TestSchema1Migrated: a database of schema 1 (bare JSON records) passes
// the check unchanged, and Open serves it after rewriting every record
// with its checksum, keeping the jobs.
func TestSchema1Migrated(t *testing.T) {
	path, orig := storeWithJobs(t)
	var want []*client.JobRecord
	ro, err := store.OpenBoltReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro.View(context.Background(), func(tx *store.Tx) error {
		return tx.Jobs(true, func(j *client.JobRecord) error { want = append(want, j); return nil })
	}); err != nil {
		t.Fatal(err)
	}
	ro.Close()
	q, old := editStore(t, orig, func(tx *bolt.Tx) error {
		// Schema 1 kept each job's routes in its record and had no
		// tables bucket (nor the requests bucket and meta checksums of
		// schema 3).
		if err := tx.DeleteBucket(bRequests); err != nil {
			return err
		}
		if err := tx.Bucket(bMeta).Delete(kMetaSum); err != nil {
			return err
		}
		for _, j := range want {
			data, err := client.MarshalJSON(j)
			if err != nil {
				return err
			}
			if err := tx.Bucket(bJobs).Put(u64(uint64(j.ID)), data); err != nil {
				return err
			}
		}
		if err := tx.DeleteBucket(bTables); err != nil {
			return err
		}
		for _, name := range [][]byte{bFabric, bGroups, bAudit} {
			b := tx.Bucket(name)
			var keys, vals [][]byte
			b.ForEach(func(k, v []byte) error {
				data, err := unframeRecord(v, false)
				if err != nil {
					return err
				}
				keys, vals = append(keys, bytes.Clone(k)), append(vals, bytes.Clone(data))
				return nil
			})
			for i, k := range keys {
				if err := b.Put(k, vals[i]); err != nil {
					return err
				}
			}
		}
		if err := tx.Bucket(bMeta).Delete(kMetaSum); err != nil {
			return err
		}
		return tx.Bucket(bMeta).Put(kVersion, u64(1))
	})
	cfg := Config{DBPath: q, NewRouting: AngaraRouting("angara*")}
	if err := Check(cfg); err != nil {
		t.Fatalf("schema 1 store: %v", err)
	}
	if after, _ := os.ReadFile(q); !bytes.Equal(after, old) {
		t.Fatal("the check modified the file")
	}
	// A new token: the copy has no token file of its own.
	s, _, err := Open(Config{DBPath: q, NewRouting: AngaraRouting("angara*"), RotateToken: true})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := s.Jobs(false)
	if err != nil || len(jobs) != 3 {
		t.Fatalf("%d jobs after migration (%v)", len(jobs), err)
	}
	for _, w := range want {
		if got := s.jobs[w.ID]; got == nil || !reflect.DeepEqual(mustTable(got), mustTable(w)) {
			t.Errorf("job %d: table changed by the migration", w.ID)
		}
	}
	s.Close()
	db, err := bolt.Open(q, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error {
		if v, _ := storeSchema(tx.Bucket(bMeta)); v != schemaVersion {
			t.Errorf("schema %d after Open", v)
		}
		for _, name := range [][]byte{bFabric, bJobs, bGroups, bAudit, bTables} {
			tx.Bucket(name).ForEach(func(k, v []byte) error {
				if _, err := unframeRecord(v, false); err != nil {
					t.Errorf("%s %x after migration: %v", name, k, err)
				}
				return nil
			})
		}
		return nil
	})
}

// TestStoredRoutesRoundTrip: jobs read back from the store carry exactly
// the tables they were placed with, and their routes take less than a
// fiftieth of their JSON.
func TestStoredRoutesRoundTrip(t *testing.T) {
	s, _ := openTest(t, t.TempDir(), "torus:8x8x4", nil)
	defer s.Close()
	var ids []int
	for _, req := range []client.JobRequest{{Nodes: 1}, {Nodes: 2}, {Nodes: 24, Transit: 6}, {Nodes: 64, Transit: 8}} {
		j, err := s.Submit("test", req)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	_, err := s.store.View(context.Background(), func(tx *store.Tx) error {
		for _, id := range ids {
			got, err := tx.Job(id)
			if err != nil {
				return err
			}
			want := mustTable(s.jobs[id])
			if !reflect.DeepEqual(got.Table, want) {
				t.Errorf("job %d: table read back differs", id)
			}
			enc, err := routing.EncodeStoredRoutes(want)
			if err != nil {
				return err
			}
			if kept := s.jobs[id].StoredRoutes; !bytes.Equal(kept, enc) {
				t.Errorf("job %d: %d bytes kept in memory, %d stored", id, len(kept), len(enc))
			}
			stored := len(frameRecord(enc))
			js, _ := json.Marshal(want.Routes)
			t.Logf("job %d: %d routes, %d bytes stored, %d bytes of JSON", id, len(want.Routes), stored, len(js))
			if len(want.Routes) > 100 && stored*50 > len(js) {
				t.Errorf("job %d: %d bytes stored for %d of JSON", id, stored, len(js))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestStartCompactsSparseStore: a database whose pages are mostly free
// (released jobs' tables) is compacted by the next start: the file
// shrinks, passes the check, and keeps every job and the token; a dense
// one is left as it is.
func TestStartCompactsSparseStore(t *testing.T) {
	dir := t.TempDir()
	s, _ := openTest(t, dir, "torus:16x16x8", nil)
	var placed []*client.JobRecord
	for i := 0; i < 8; i++ { // about 6 MB of tables, more than compactMin
		j, err := s.Submit("test", client.JobRequest{Nodes: 256})
		if err != nil {
			t.Fatal(err)
		}
		placed = append(placed, j)
	}
	keep := placed[0]
	s.Close()
	db := filepath.Join(dir, "fm.db")
	// Tables icn builds are stored in a fraction of a byte a route: those
	// to be released are written again in the stored form's version 1
	// (as a store of schema 4 holds them), which makes them large enough.
	toV1Routes(t, db, placed[1:])
	s, _ = openTest(t, dir, "", nil)
	for _, j := range placed[1:] {
		if _, err := s.Release("test", j.ID); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	fi, _ := os.Stat(db)
	sparse := fi.Size()
	s, _ = openTest(t, dir, "", nil)
	before, after := s.Compacted()
	if before != sparse || after >= before/2 {
		t.Fatalf("compaction: %d → %d bytes (file was %d)", before, after, sparse)
	}
	if got := s.jobs[keep.ID]; got == nil || !reflect.DeepEqual(mustTable(got), mustTable(keep)) {
		t.Fatal("the running job did not survive the compaction")
	}
	if _, err := s.Submit("test", client.JobRequest{Nodes: 8, Transit: 2}); err != nil {
		t.Fatalf("submit after compaction: %v", err)
	}
	s.Close()
	if err := store.CheckFile(db); err != nil {
		t.Fatal(err)
	}
	s, _ = openTest(t, dir, "", nil)
	if b, a := s.Compacted(); a != b {
		t.Errorf("a dense database was compacted again: %d → %d", b, a)
	}
	s.Close()
}

// toV1Routes writes the routes of the given jobs of the store at db again
// in the stored form's version 1 (routing.RecodeStoredRoutes).
func toV1Routes(t *testing.T, db string, jobs []*client.JobRecord) {
	t.Helper()
	st, _, err := store.OpenBolt(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, err = st.Update(context.Background(), "test", func(tx *store.Tx) error {
		for _, j := range jobs {
			j, err := tx.Job(j.ID)
			if err != nil {
				return err
			}
			routes, err := routing.EncodeStoredRoutes(j.Table)
			if err == nil {
				routes, err = routing.RecodeStoredRoutes(routes, j.Table, 1)
			}
			if err != nil {
				return err
			}
			if err := tx.PutJob(j, routes); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// toSchema3 makes a store what schema 3 wrote: no loads bucket.
func toSchema3(tx *bolt.Tx) error {
	if err := tx.DeleteBucket(bLoads); err != nil {
		return err
	}
	return setSchema(tx, 3)
}

// setSchema makes the store claim schema v, its meta checksums kept.
func setSchema(tx *bolt.Tx, v uint64) error {
	if err := tx.Bucket(bMeta).Put(kVersion, u64(v)); err != nil {
		return err
	}
	return putMetaSums(tx.Bucket(bMeta))
}

// storedLoads returns the jobs whose link loads the store at path keeps.
func storedLoads(t *testing.T, path string) []int {
	return storedKeys(t, path, bLoads, func([]byte) bool { return true })
}

// storedKeys returns the jobs of the store at path with a value in bucket
// that keep accepts.
func storedKeys(t *testing.T, path string, bucket []byte, keep func(v []byte) bool) []int {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ids []int
	db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucket); b != nil {
			b.ForEach(func(k, v []byte) error {
				if keep(v) {
					ids = append(ids, int(binary.BigEndian.Uint64(k)))
				}
				return nil
			})
		}
		return nil
	})
	return ids
}

// TestStoredLinkLoads: a placement stores its table's link loads with
// its routes; a start takes them as stored and gives the same loads as
// counting the routes again; a store of schema 3 (none kept) is migrated,
// its loads counted at the start and stored for the next one; loads
// left from routes a job no longer has are dropped with them.
func TestStoredLinkLoads(t *testing.T) {
	dir := t.TempDir()
	s, _ := openTest(t, dir, "torus:4x4x4", nil)
	for _, req := range []client.JobRequest{{Nodes: 4}, {Nodes: 6, Transit: 2}, {Nodes: 3}} {
		if _, err := s.Submit("test", req); err != nil {
			t.Fatal(err)
		}
	}
	want := slices.Clone(s.LinkLoads())
	if slices.Max(want) == 0 {
		t.Fatal("no link carries a route")
	}
	path, orig := closedStore(t, s, dir)
	if got := storedLoads(t, path); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("link loads stored for jobs %v, want 1 2 3", got)
	}
	reopen := func(path string, counted int) []int {
		t.Helper()
		s, _, err := Open(Config{DBPath: path, NewRouting: AngaraRouting("angara*"), RotateToken: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.countedAtStart != counted {
			t.Fatalf("the start counted the loads of %d jobs, want %d", s.countedAtStart, counted)
		}
		return slices.Clone(s.LinkLoads())
	}
	if got := reopen(path, 0); !slices.Equal(got, want) {
		t.Fatalf("loads after a start from the stored ones differ from the counted ones")
	}
	// Schema 3: counted at the start, stored for the next.
	q, _ := editStore(t, orig, toSchema3)
	if got := reopen(q, 3); !slices.Equal(got, want) {
		t.Fatalf("loads counted at the start of a schema 3 store differ")
	}
	if got := storedLoads(t, q); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("after the migration, link loads stored for jobs %v", got)
	}
	if err := Check(Config{DBPath: q, NewRouting: AngaraRouting("angara*")}); err != nil {
		t.Fatal(err)
	}
	if got := reopen(q, 0); !slices.Equal(got, want) {
		t.Fatalf("loads after the second start differ")
	}
	// A failure re-routes a job: its new routes' loads are stored with
	// them.
	s, _, err := Open(Config{DBPath: q, NewRouting: AngaraRouting("angara*"), RotateToken: true})
	if err != nil {
		t.Fatal(err)
	}
	rerouted := 0
	for l, n := range s.LinkLoads() {
		if n == 0 {
			continue
		}
		res, err := s.ChangeFailure(context.Background(), "test", client.FailureChange{Link: s.g.LinkName(l)})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range res.Jobs {
			if e.Result == client.RouteRerouted {
				rerouted++
			}
		}
		if rerouted > 0 {
			break
		}
		if _, err := s.ChangeFailure(context.Background(), "test", client.FailureChange{Link: s.g.LinkName(l), Repair: true}); err != nil {
			t.Fatal(err)
		}
	}
	if rerouted == 0 {
		t.Fatal("no failure re-routed a job")
	}
	want = slices.Clone(s.LinkLoads())
	s.Close()
	if got := reopen(q, 0); !slices.Equal(got, want) {
		t.Fatalf("loads after a start following a re-routing differ")
	}
	// A release drops the job's routes and their loads.
	s, _, err = Open(Config{DBPath: q, NewRouting: AngaraRouting("angara*"), RotateToken: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Release("test", 2); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if got := storedLoads(t, q); slices.Contains(got, 2) {
		t.Fatalf("link loads of the released job 2 kept: %v", got)
	}
	if err := Check(Config{DBPath: q, NewRouting: AngaraRouting("angara*")}); err != nil {
		t.Fatal(err)
	}
}

// toSchema4 makes a store what schema 4 wrote: routes in version 1 of the
// stored form, with their link loads tied to them.
func toSchema4(tx *bolt.Tx) error {
	tables, loads := tx.Bucket(bTables), tx.Bucket(bLoads)
	var keys [][]byte
	tables.ForEach(func(k, _ []byte) error { keys = append(keys, bytes.Clone(k)); return nil })
	for _, k := range keys {
		var j client.JobRecord
		data, err := unframeRecord(tx.Bucket(bJobs).Get(k), false)
		if err == nil {
			err = json.Unmarshal(data, &j)
		}
		if err != nil {
			return err
		}
		routes, err := unframeRecord(tables.Get(k), false)
		if err != nil {
			return err
		}
		if routes, err = routing.RecodeStoredRoutes(routes, j.Table, 1); err != nil {
			return err
		}
		framed := frameRecord(routes)
		if err := tables.Put(k, framed); err != nil {
			return err
		}
		l, err := unframeRecord(loads.Get(k), false)
		if err != nil {
			return err
		}
		l = bytes.Clone(l)
		copy(l[1:5], framed[1:5]) // tied to the new routes' checksum
		if err := loads.Put(k, frameRecord(l)); err != nil {
			return err
		}
	}
	return setSchema(tx, 4)
}

// storedRoutesV2 returns the jobs of the store at path whose routes are
// stored in version 2 of the stored form.
func storedRoutesV2(t *testing.T, path string) []int {
	return storedKeys(t, path, bTables, func(v []byte) bool {
		data, err := unframeRecord(v, false)
		return err == nil && routing.StoredRoutesVersion(data) == 2
	})
}

// TestRoutesRecodedAtMigration: a placement stores its routes in version
// 2 of the stored form; a store of schema 4 (version 1, loads tied to
// those routes) is migrated to version 2 at the start, with the same
// tables, its loads still tied (none counted again at the next start) and
// the file check passing.
func TestRoutesRecodedAtMigration(t *testing.T) {
	dir := t.TempDir()
	s, _ := openTest(t, dir, "torus:4x4x4", nil)
	for _, req := range []client.JobRequest{{Nodes: 8}, {Nodes: 6, Transit: 2}, {Nodes: 27}} {
		if _, err := s.Submit("test", req); err != nil {
			t.Fatal(err)
		}
	}
	want := map[int]*routing.TableJSON{}
	for id, j := range s.jobs {
		want[id] = mustTable(j)
	}
	loads := slices.Clone(s.LinkLoads())
	path, orig := closedStore(t, s, dir)
	if got := storedRoutesV2(t, path); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("routes of jobs %v stored in version 2, want 1 2 3", got)
	}
	q, _ := editStore(t, orig, toSchema4)
	if got := storedRoutesV2(t, q); len(got) != 0 {
		t.Fatalf("the schema 4 store has version 2 routes for jobs %v", got)
	}
	for i := range 2 {
		s, _, err := Open(Config{DBPath: q, NewRouting: AngaraRouting("angara*"), RotateToken: true})
		if err != nil {
			t.Fatal(err)
		}
		if s.countedAtStart != 0 || !slices.Equal(s.LinkLoads(), loads) {
			t.Fatalf("start %d: loads of %d jobs counted again, or other loads", i, s.countedAtStart)
		}
		for id, j := range s.jobs {
			if !reflect.DeepEqual(mustTable(j), want[id]) {
				t.Fatalf("start %d: job %d has another table", i, id)
			}
		}
		s.Close()
		if got := storedRoutesV2(t, q); !slices.Equal(got, []int{1, 2, 3}) {
			t.Fatalf("after start %d, routes of jobs %v in version 2, want 1 2 3", i, got)
		}
		if err := Check(Config{DBPath: q, NewRouting: AngaraRouting("angara*")}); err != nil {
			t.Fatal(err)
		}
	}
}
