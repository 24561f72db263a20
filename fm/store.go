package fm

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The store is a single bbolt file. Every change the service acknowledges
// is one bbolt transaction (fsync'ed on commit), so after a crash at any
// moment the file holds either all of a change or none of it.
//
// Buckets:
//
//	meta    magic, schema version, token hash, creation time
//	fabric  "current": the fabric record (spec and failures)
//	jobs    job id (8-byte big endian) → JobRecord JSON
//	groups  multicast group id → GroupRecord JSON
//	audit   sequence (8-byte big endian) → Event JSON
var (
	bMeta   = []byte("meta")
	bFabric = []byte("fabric")
	bJobs   = []byte("jobs")
	bGroups = []byte("groups")
	bAudit  = []byte("audit")

	kMagic   = []byte("magic")
	kVersion = []byte("schema")
	kToken   = []byte("token_sha256")
	kCreated = []byte("created")
	kCurrent = []byte("current")
	kNextJob = []byte("next_job")
	kShown   = []byte("token_shown")

	magic = []byte("icn-fabric-manager")
)

const schemaVersion = 1

// Store wraps the database file.
type Store struct {
	db   *bolt.DB
	path string
	// failWrites, when set, makes every write transaction fail after fn
	// ran (as a full or read-only disk would), for tests.
	failWrites func() error
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
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, false, fmt.Errorf("%w: %s (is icn serve already running?)", ErrLocked, path)
		}
		return nil, false, fmt.Errorf("cannot open database %s: %v (the file was not modified)", path, err)
	}
	s = &Store{db: db, path: path}
	if created {
		err = db.Update(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{bMeta, bFabric, bJobs, bGroups, bAudit} {
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
			return m.Put(kCreated, []byte(time.Now().UTC().Format(time.RFC3339)))
		})
		if err != nil {
			db.Close()
			os.Remove(path)
			return nil, false, fmt.Errorf("cannot initialise database %s: %v", path, err)
		}
		return s, true, nil
	}
	err = db.View(func(tx *bolt.Tx) error {
		m := tx.Bucket(bMeta)
		if m == nil || string(m.Get(kMagic)) != string(magic) {
			return fmt.Errorf("%s: %w", path, ErrForeign)
		}
		if v := m.Get(kVersion); len(v) != 8 || binary.BigEndian.Uint64(v) != schemaVersion {
			return fmt.Errorf("%s: unsupported schema version", path)
		}
		for _, b := range [][]byte{bFabric, bJobs, bGroups, bAudit} {
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

// OpenStoreReadOnly checks an existing database and opens it read-only
// (for backups of a database no service holds).
func OpenStoreReadOnly(path string) (s *Store, err error) {
	defer recoverStore(&err)
	if err := CheckFile(path); err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 500 * time.Millisecond})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, path)
		}
		return nil, err
	}
	return &Store{db: db, path: path}, nil
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
	buf := make([]byte, 32)
	n, _ := f.Read(buf)
	// bbolt meta page: magic 0xED0CDAED at offset 16 (page header 16 bytes).
	if n < 20 || binary.LittleEndian.Uint32(buf[16:20]) != 0xED0CDAED {
		return fmt.Errorf("%s is not an icn database (not a bbolt file); refusing to open it, the file was not modified", path)
	}
	return nil
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
}

// Update runs fn in one write transaction on behalf of actor; the change
// is durable when Update returns nil.
func (s *Store) Update(actor string, fn func(*Tx) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverStore(&err)
	return s.db.Update(func(btx *bolt.Tx) error {
		if err := fn(&Tx{tx: btx, actor: actor, now: time.Now().UTC()}); err != nil {
			return err
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
	return s.db.View(func(btx *bolt.Tx) error { return fn(&Tx{tx: btx}) })
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
	return b.Put(key, data)
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
	err = json.Unmarshal(v, &f)
	return f, true, err
}

// NextJobID allocates a job id.
func (t *Tx) NextJobID() (int, error) {
	m := t.tx.Bucket(bMeta)
	id := uint64(1)
	if v := m.Get(kNextJob); len(v) == 8 {
		id = binary.BigEndian.Uint64(v)
	}
	if err := m.Put(kNextJob, u64(id+1)); err != nil {
		return 0, err
	}
	return int(id), nil
}

// PutJob stores a job.
func (t *Tx) PutJob(j *JobRecord) error { return putJSON(t.tx.Bucket(bJobs), u64(uint64(j.ID)), j) }

// Job reads one stored job (nil if there is none).
func (t *Tx) Job(id int) (*JobRecord, error) {
	v := t.tx.Bucket(bJobs).Get(u64(uint64(id)))
	if v == nil {
		return nil, nil
	}
	var j JobRecord
	if err := j.UnmarshalJSON(v); err != nil {
		return nil, fmt.Errorf("job %d: %v", id, err)
	}
	return &j, nil
}

// Jobs calls fn for every stored job in id order.
func (t *Tx) Jobs(fn func(*JobRecord) error) error {
	return t.tx.Bucket(bJobs).ForEach(func(k, v []byte) error {
		var j JobRecord
		if err := j.UnmarshalJSON(v); err != nil { // one pass less than json.Unmarshal
			return fmt.Errorf("job %x: %v", k, err)
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
		if err := json.Unmarshal(v, &g); err != nil {
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
		if err := json.Unmarshal(v, &e); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// SetTokenHash stores the hash of the API token.
func (t *Tx) SetTokenHash(h []byte) error { return t.tx.Bucket(bMeta).Put(kToken, h) }

// SetTokenShown records whether the token was shown by a serving start.
func (t *Tx) SetTokenShown(shown bool) error {
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
