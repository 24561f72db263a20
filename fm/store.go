package fm

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// The store is a single bbolt file. Every change the service acknowledges
// is one bbolt transaction (fsync'ed on commit), so after a crash at any
// moment the file holds either all of a change or none of it.
//
// Buckets:
//
//	meta    magic, schema version, token hash, creation time, next job
//	        id, and (schema 3) the checksums of all of them (record.go)
//	fabric  "current": the fabric record (spec and failures)
//	jobs    job id (8-byte big endian) → JobRecord JSON, its table's
//	        routes left out
//	tables  job id → the routes of the job's table (tablebin.go)
//	groups  multicast group id → GroupRecord JSON
//	audit   sequence (8-byte big endian) → Event JSON
var (
	bMeta   = []byte("meta")
	bFabric = []byte("fabric")
	bJobs   = []byte("jobs")
	bGroups = []byte("groups")
	bAudit  = []byte("audit")
	bTables = []byte("tables")

	kMagic   = []byte("magic")
	kVersion = []byte("schema")
	kToken   = []byte("token_sha256")
	kCreated = []byte("created")
	kCurrent = []byte("current")
	kNextJob = []byte("next_job")
	kShown   = []byte("token_shown")
	kMetaSum = []byte("crc32c")

	magic = []byte("icn-fabric-manager")
)

// schemaVersion 2 frames every record with a checksum (record.go) and
// keeps job tables' routes in the tables bucket; schema 3 adds the
// checksums of the meta bucket's values (metaSums). Stores of schema 1
// and 2 are still read and are migrated when served.
const schemaVersion = 3

// metaSumsSchema is the first schema whose meta bucket is checksummed.
const metaSumsSchema = 3

// maxNextJob is the largest next job id a store may hold: ids stay
// within 2^53−1, the largest integer a JSON number holds exactly in the
// clients (the web page's JavaScript).
const maxNextJob = 1<<53 - 1

// oldestSchema is the oldest schema version the store still reads.
const oldestSchema = 1

// Store wraps the database file.
type Store struct {
	db   *bolt.DB
	path string
	// legacy: the file is of schema 1 (bare JSON records), opened
	// read-only (a service migrates it at open).
	legacy bool
	// sums: the meta bucket keeps checksums (schema 3), which every write
	// transaction that changes meta recomputes.
	sums bool
	// failWrites, when set, makes every write transaction fail after fn
	// ran (as a full or read-only disk would), for tests; a failWrites
	// that blocks holds the transaction open (nil lets it commit).
	failWrites func() error
	// beforeWrite, when set, runs at the start of every write
	// transaction, before bbolt's (tests: to notice a write after Close).
	beforeWrite func()
}

// ErrLocked is returned when another process holds the database.
var ErrLocked = errors.New("database locked by another process")

// ErrForeign is returned for database files that are not icn's.
var ErrForeign = errors.New("not an icn fabric-manager database")

// OpenStore opens (or creates) the database. An existing file that is not
// a valid bbolt database, or is one written by something else, is refused
// and never modified. created reports whether the file is new.
func OpenStore(path string) (s *Store, created bool, err error) {
	defer recoverStore(&err)
	_, statErr := os.Stat(path)
	created = errors.Is(statErr, os.ErrNotExist)
	if !created && statErr != nil {
		return nil, false, statErr
	}
	if !created {
		if err := CheckFile(path); err != nil {
			return nil, false, err
		}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, false, fmt.Errorf("%w: %s (is icn serve already running?)", ErrLocked, path)
		}
		return nil, false, fmt.Errorf("cannot open database %s: %v (the file was not modified)", path, err)
	}
	s = &Store{db: db, path: path}
	if created {
		err = db.Update(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{bMeta, bFabric, bJobs, bGroups, bAudit, bTables} {
				if _, err := tx.CreateBucket(b); err != nil {
					return err
				}
			}
			m := tx.Bucket(bMeta)
			if err := m.Put(kMagic, magic); err != nil {
				return err
			}
			if err := m.Put(kVersion, u64(schemaVersion)); err != nil {
				return err
			}
			if err := m.Put(kCreated, []byte(time.Now().UTC().Format(time.RFC3339))); err != nil {
				return err
			}
			return putMetaSums(m)
		})
		if err != nil {
			db.Close()
			os.Remove(path)
			return nil, false, fmt.Errorf("cannot initialise database %s: %v", path, err)
		}
		s.sums = true
		return s, true, nil
	}
	err = db.View(func(tx *bolt.Tx) error {
		m := tx.Bucket(bMeta)
		if m == nil || string(m.Get(kMagic)) != string(magic) {
			return fmt.Errorf("%s: %w", path, ErrForeign)
		}
		v, err := storeSchema(m)
		if err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		s.legacy, s.sums = v == 1, v >= metaSumsSchema
		for _, b := range storeBuckets(v) {
			if tx.Bucket(b) == nil {
				return fmt.Errorf("%s: bucket %s missing: database damaged", path, b)
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, false, err
	}
	return s, false, nil
}

// storeBuckets lists the buckets a store of schema v has besides meta.
func storeBuckets(v uint64) [][]byte {
	if v == 1 {
		return [][]byte{bFabric, bJobs, bGroups, bAudit}
	}
	return [][]byte{bFabric, bJobs, bGroups, bAudit, bTables}
}

// storeSchema reads and checks the schema version of the meta bucket.
func storeSchema(m *bolt.Bucket) (uint64, error) {
	v := m.Get(kVersion)
	if len(v) != 8 {
		return 0, fmt.Errorf("meta schema: the schema version has %d bytes, want 8", len(v))
	}
	n := binary.BigEndian.Uint64(v)
	if n < oldestSchema || n > schemaVersion {
		return 0, fmt.Errorf("meta schema: unsupported schema version %d (this icn reads %d to %d)", n, oldestSchema, schemaVersion)
	}
	return n, nil
}

// migrate brings a store of an older schema (checked by CheckFile) to
// the current one in one transaction: after a crash the file is either
// still of its schema or wholly of the new one. Schema 1 records are
// framed with their checksums and jobs' routes move to the tables
// bucket; the meta bucket gets its checksums (schema 3).
func (s *Store) migrate() error {
	if s.sums {
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		m := tx.Bucket(bMeta)
		v, err := storeSchema(m)
		if err != nil || v >= metaSumsSchema {
			return err
		}
		if v == 1 {
			if err := frameSchema1(tx); err != nil {
				return err
			}
		}
		if err := m.Put(kVersion, u64(schemaVersion)); err != nil {
			return err
		}
		return putMetaSums(m)
	})
	if err == nil {
		s.legacy, s.sums = false, true
	}
	return err
}

// frameSchema1 rewrites the records of a schema 1 store framed with
// their checksums, and moves jobs' routes to the tables bucket.
func frameSchema1(tx *bolt.Tx) error {
	for _, name := range [][]byte{bFabric, bGroups, bAudit} {
		b := tx.Bucket(name)
		var keys, vals [][]byte
		if err := b.ForEach(func(k, v []byte) error {
			data, err := unframeRecord(v, true)
			if err != nil {
				return fmt.Errorf("%s %s: %v", name, keyName(k), err)
			}
			keys, vals = append(keys, append([]byte(nil), k...)), append(vals, frameRecord(data))
			return nil
		}); err != nil {
			return err
		}
		for i, k := range keys {
			if err := b.Put(k, vals[i]); err != nil {
				return err
			}
		}
	}
	if _, err := tx.CreateBucketIfNotExists(bTables); err != nil {
		return err
	}
	t := &Tx{tx: tx, legacy: true}
	var jobs []*JobRecord
	if err := t.Jobs(func(j *JobRecord) error { jobs = append(jobs, j); return nil }); err != nil {
		return err
	}
	t.legacy = false
	for _, j := range jobs {
		if err := t.PutJob(j); err != nil {
			return err
		}
	}
	return nil
}

// OpenStoreReadOnly checks an existing database and opens it read-only
// (for backups of a database no service holds).
func OpenStoreReadOnly(path string) (s *Store, err error) {
	defer recoverStore(&err)
	if err := CheckFile(path); err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 500 * time.Millisecond})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, path)
		}
		return nil, err
	}
	s = &Store{db: db, path: path}
	err = db.View(func(tx *bolt.Tx) error {
		v, err := storeSchema(tx.Bucket(bMeta))
		s.legacy, s.sums = v == 1, v >= metaSumsSchema
		return err
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// checkHeader refuses files that are clearly not bbolt databases before
// bbolt touches them (bbolt would fail anyway; this keeps the message
// clear and guarantees the file is left alone).
func checkHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	// bbolt meta page: magic 0xED0CDAED at offset 16 (page header 16
	// bytes), in meta page 0 or, when that one is damaged (CheckFile then
	// says so), in meta page 1 one page further.
	buf := make([]byte, 20)
	for _, off := range []int64{0, 4096, int64(os.Getpagesize()), 16384, 65536} {
		if n, _ := f.ReadAt(buf, off); n == 20 && binary.LittleEndian.Uint32(buf[16:20]) == 0xED0CDAED {
			return nil
		}
	}
	return fmt.Errorf("%s is not an icn database (not a bbolt file); refusing to open it, the file was not modified", path)
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Path returns the database file name.
func (s *Store) Path() string { return s.path }

// Tx is one write transaction.
type Tx struct {
	tx    *bolt.Tx
	actor string
	now   time.Time
	// legacy: records may be bare JSON (a schema 1 store read-only).
	legacy bool
	// metaChanged: the transaction wrote to the meta bucket (its
	// checksums are recomputed before it commits).
	metaChanged bool
}

// record returns the JSON of a stored record after checking its
// checksum.
func (t *Tx) record(v []byte) ([]byte, error) { return unframeRecord(v, t.legacy) }

// Update runs fn in one write transaction on behalf of actor; the change
// is durable when Update returns nil.
func (s *Store) Update(actor string, fn func(*Tx) error) (err error) {
	if s.beforeWrite != nil {
		s.beforeWrite()
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverStore(&err)
	return s.db.Update(func(btx *bolt.Tx) error {
		t := &Tx{tx: btx, actor: actor, now: time.Now().UTC(), legacy: s.legacy}
		if err := fn(t); err != nil {
			return err
		}
		if t.metaChanged && s.sums {
			if err := putMetaSums(btx.Bucket(bMeta)); err != nil {
				return err
			}
		}
		if s.failWrites != nil {
			return s.failWrites() // rolls the transaction back
		}
		return nil
	})
}

// View runs fn in a read transaction.
func (s *Store) View(fn func(*Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverStore(&err)
	return s.db.View(func(btx *bolt.Tx) error { return fn(&Tx{tx: btx, legacy: s.legacy}) })
}

// recoverStore turns a panic of the storage layer (bbolt panics on pages
// it cannot read) into an error.
func recoverStore(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%w: %v", ErrDamaged, p)
	}
}

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	data, err := marshalJSON(v)
	if err != nil {
		return err
	}
	return b.Put(key, frameRecord(data))
}

// Event is one audit-log entry.
type Event struct {
	Seq     uint64          `json:"seq"`
	Time    time.Time       `json:"time"`
	Actor   string          `json:"actor"`
	Action  string          `json:"action"`
	Subject string          `json:"subject"`
	Detail  json.RawMessage `json:"detail,omitempty"`
}

// Log appends an audit event in the transaction.
func (t *Tx) Log(action, subject string, detail any) error {
	b := t.tx.Bucket(bAudit)
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	ev := Event{Seq: seq, Time: t.now, Actor: t.actor, Action: action, Subject: subject}
	if detail != nil {
		if ev.Detail, err = json.Marshal(detail); err != nil {
			return err
		}
	}
	return putJSON(b, u64(seq), ev)
}

// PutFabric stores the fabric record.
func (t *Tx) PutFabric(f FabricRecord) error { return putJSON(t.tx.Bucket(bFabric), kCurrent, f) }

// Fabric reads the fabric record (ok false if none yet).
func (t *Tx) Fabric() (f FabricRecord, ok bool, err error) {
	v := t.tx.Bucket(bFabric).Get(kCurrent)
	if v == nil {
		return f, false, nil
	}
	data, err := t.record(v)
	if err != nil {
		return f, true, fmt.Errorf("fabric record: %v", err)
	}
	err = json.Unmarshal(data, &f)
	return f, true, err
}

// NextJobID allocates a job id (at most maxNextJob−1: the next id stays
// within 2^53−1).
func (t *Tx) NextJobID() (int, error) {
	m := t.tx.Bucket(bMeta)
	id := uint64(1)
	if v := m.Get(kNextJob); len(v) == 8 {
		id = binary.BigEndian.Uint64(v)
	}
	if id >= maxNextJob {
		return 0, fmt.Errorf("job ids exhausted: the next id %d would pass 2^53−1", id)
	}
	t.metaChanged = true
	if err := m.Put(kNextJob, u64(id+1)); err != nil {
		return 0, err
	}
	return int(id), nil
}

// PutJob stores a job: its record, and its table's routes apart.
func (t *Tx) PutJob(j *JobRecord) error { return t.PutJobRoutes(j, nil) }

// PutJobRoutes is PutJob with the table's routes already encoded
// (encodeRoutes, done before the transaction; nil: encode them here).
func (t *Tx) PutJobRoutes(j *JobRecord, routes []byte) error {
	key := u64(uint64(j.ID))
	tables := t.tx.Bucket(bTables)
	if j.Table == nil {
		if err := tables.Delete(key); err != nil {
			return err
		}
		return putJSON(t.tx.Bucket(bJobs), key, j)
	}
	if routes == nil {
		var err error
		if routes, err = encodeRoutes(j.Table); err != nil {
			return fmt.Errorf("job %d: %v", j.ID, err)
		}
	}
	if err := tables.Put(key, frameRecord(routes)); err != nil {
		return err
	}
	return t.putJobHead(j)
}

// putJobHead stores a job's record with its table's header only, the
// routes being stored already (the job keeps the table it had).
func (t *Tx) putJobHead(j *JobRecord) error {
	c := *j
	head := *j.Table
	head.Routes = nil
	c.Table = &head
	return putJSON(t.tx.Bucket(bJobs), u64(uint64(j.ID)), &c)
}

// attachRoutes reads a stored job's routes back into its table (schema 1
// stores kept them in the record).
func (t *Tx) attachRoutes(j *JobRecord) error {
	if j.Table == nil || t.legacy {
		return nil
	}
	data, err := t.storedRoutes(j)
	if err != nil {
		return err
	}
	return decodeRoutes(data, j.Table)
}

// storedRoutes returns the stored routes of a job's table (tablebin.go),
// checksum checked; they are valid only during the transaction.
func (t *Tx) storedRoutes(j *JobRecord) ([]byte, error) {
	v := t.tx.Bucket(bTables).Get(u64(uint64(j.ID)))
	if v == nil {
		return nil, errNoRoutes
	}
	data, err := t.record(v)
	if err != nil {
		return nil, fmt.Errorf("routes: %v", err)
	}
	return data, nil
}

// jobsStored calls fn for every stored job in id order with its key, its
// record (its table's header only: no routes) and its table's stored
// routes, checksum checked and not yet decoded (nil when the job has no
// table, and in a schema 1 store, whose records hold the routes); the
// routes are valid only during the transaction.
func (t *Tx) jobsStored(fn func(key []byte, j *JobRecord, routes []byte) error) error {
	return t.tx.Bucket(bJobs).ForEach(func(k, v []byte) error {
		var j JobRecord
		data, err := t.record(v)
		if err == nil {
			err = j.UnmarshalJSON(data)
		}
		var routes []byte
		if err == nil && j.Table != nil && !t.legacy {
			routes, err = t.storedRoutes(&j)
		}
		if err != nil {
			return fmt.Errorf("job %s: %v", keyName(k), err)
		}
		return fn(k, &j, routes)
	})
}

// Job reads one stored job (nil if there is none).
func (t *Tx) Job(id int) (*JobRecord, error) {
	v := t.tx.Bucket(bJobs).Get(u64(uint64(id)))
	if v == nil {
		return nil, nil
	}
	var j JobRecord
	data, err := t.record(v)
	if err == nil {
		err = j.UnmarshalJSON(data)
	}
	if err == nil {
		err = t.attachRoutes(&j)
	}
	if err != nil {
		return nil, fmt.Errorf("job %d: %v", id, err)
	}
	return &j, nil
}

// Jobs calls fn for every stored job in id order.
func (t *Tx) Jobs(fn func(*JobRecord) error) error { return t.jobs(true, fn) }

// jobs calls fn for every stored job in id order, with its table's
// routes only if routes is set (the record keeps the table's header).
func (t *Tx) jobs(routes bool, fn func(*JobRecord) error) error {
	return t.tx.Bucket(bJobs).ForEach(func(k, v []byte) error {
		var j JobRecord
		data, err := t.record(v)
		if err == nil {
			err = j.UnmarshalJSON(data) // one pass less than json.Unmarshal
		}
		if err == nil && routes {
			err = t.attachRoutes(&j)
		}
		if err != nil {
			return fmt.Errorf("job %s: %v", keyName(k), err)
		}
		return fn(&j)
	})
}

// PutGroup stores a multicast group.
func (t *Tx) PutGroup(g *GroupRecord) error { return putJSON(t.tx.Bucket(bGroups), []byte(g.ID), g) }

// DeleteGroup removes a multicast group.
func (t *Tx) DeleteGroup(id string) error { return t.tx.Bucket(bGroups).Delete([]byte(id)) }

// Groups calls fn for every stored group.
func (t *Tx) Groups(fn func(*GroupRecord) error) error {
	return t.tx.Bucket(bGroups).ForEach(func(k, v []byte) error {
		var g GroupRecord
		data, err := t.record(v)
		if err == nil {
			err = json.Unmarshal(data, &g)
		}
		if err != nil {
			return fmt.Errorf("group %s: %v", k, err)
		}
		return fn(&g)
	})
}

// Events returns audit events with seq > after, at most limit of them.
func (t *Tx) Events(after uint64, limit int) ([]Event, error) {
	var out []Event
	c := t.tx.Bucket(bAudit).Cursor()
	for k, v := c.Seek(u64(after + 1)); k != nil && len(out) < limit; k, v = c.Next() {
		var e Event
		data, err := t.record(v)
		if err == nil {
			err = json.Unmarshal(data, &e)
		}
		if err != nil {
			return nil, fmt.Errorf("audit entry %s: %v", keyName(k), err)
		}
		out = append(out, e)
	}
	return out, nil
}

// SetTokenHash stores the hash of the API token.
func (t *Tx) SetTokenHash(h []byte) error {
	t.metaChanged = true
	return t.tx.Bucket(bMeta).Put(kToken, h)
}

// SetTokenShown records whether the token was shown by a serving start.
func (t *Tx) SetTokenShown(shown bool) error {
	t.metaChanged = true
	if !shown {
		return t.tx.Bucket(bMeta).Delete(kShown)
	}
	return t.tx.Bucket(bMeta).Put(kShown, []byte{1})
}

// TokenShown reports whether the token was shown by a serving start.
func (t *Tx) TokenShown() bool { return t.tx.Bucket(bMeta).Get(kShown) != nil }

// TokenHash returns the stored token hash (nil if none).
func (t *Tx) TokenHash() []byte {
	v := t.tx.Bucket(bMeta).Get(kToken)
	if v == nil {
		return nil
	}
	return append([]byte(nil), v...)
}

// compactShare is the share of free pages above which a start compacts
// the database (a file under compactMin is left as it is).
const (
	compactShare = 0.5
	compactMin   = 4 << 20
)

// compactIfSparse rewrites the database into a new file without its free
// pages when they are more than compactShare of the pages in use (bbolt never gives
// pages back to the file system: released jobs' tables leave their
// pages free): the copy is written next to the file, synced, checked
// like any database and renamed over it, so a crash leaves either the
// old file or the new one. It returns the sizes before and after (equal
// when nothing was done).
func (s *Store) compactIfSparse() (before, after int64, err error) {
	fi, err := os.Stat(s.path)
	if err != nil {
		return 0, 0, err
	}
	before = fi.Size()
	var used int64 // pages up to the high-water mark
	err = s.db.View(func(tx *bolt.Tx) error {
		used = tx.Size()
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	st := s.db.Stats()
	// Free pages among those in use; the file's tail that bbolt grows
	// ahead of them is not counted (the next writes would grow it again).
	free := int64(st.FreePageN+st.PendingPageN) * int64(s.db.Info().PageSize)
	if before < compactMin || float64(free) <= compactShare*float64(used) {
		return before, before, nil
	}
	tmp := s.path + ".compact"
	os.Remove(tmp)
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return before, before, fmt.Errorf("compacting %s: %v", s.path, err)
	}
	if err := bolt.Compact(dst, s.db, 64<<20); err != nil {
		dst.Close()
		os.Remove(tmp)
		return before, before, fmt.Errorf("compacting %s: %v (the database was not changed)", s.path, err)
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		os.Remove(tmp)
		return before, before, err
	}
	dst.Close()
	if err := CheckFile(tmp); err != nil {
		os.Remove(tmp)
		return before, before, fmt.Errorf("compacted copy of %s failed its check: %v (the database was not changed)", s.path, err)
	}
	if err := s.db.Close(); err != nil {
		return before, before, err
	}
	if err := os.Rename(tmp, s.path); err != nil {
		os.Remove(tmp)
	} else if d, err := os.Open(dirOf(s.path)); err == nil {
		d.Sync()
		d.Close()
	}
	db, err := bolt.Open(s.path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return before, before, fmt.Errorf("reopening %s after compaction: %v", s.path, err)
	}
	s.db = db
	if fi, err := os.Stat(s.path); err == nil {
		after = fi.Size()
	}
	return before, after, nil
}

// Backup writes a consistent copy of the service's database to w.
func (s *Service) Backup(w io.Writer) (int64, error) { return s.store.Backup(w, nil) }
