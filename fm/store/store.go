package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/routing"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The store keeps the fabric manager's records in buckets, on one of two
// backends with the same layout and bytes: a bbolt file (the embedded
// default) or a key prefix on an etcd cluster (several instances, one
// leader). Every change is one transaction: after a crash the store
// holds either all of it or none of it.
//
//	meta      magic, schema version, token hash, creation time, next job
//	          id, … and the checksums of all of them (metaSums)
//	fabric    "current": the fabric record (spec and failures)
//	jobs      job id (8-byte big endian) → job record, its table's
//	          routes left out
//	tables    job id → the routes of the job's table (routes.go)
//	loads     job id → the links its table's routes cross, with the
//	          routes crossing each, tied to the routes' checksum
//	          (loads.go; schema 4)
//	groups    multicast group id → group record
//	audit     sequence (8-byte big endian) → event
//	requests  request id → the answer given to it (safe retries)
//
// Every record (meta values apart) is framed with its checksum
// (record.go); the meta values are covered by the meta checksums.
var (
	bMeta     = []byte("meta")
	bFabric   = []byte("fabric")
	bJobs     = []byte("jobs")
	bGroups   = []byte("groups")
	bAudit    = []byte("audit")
	bTables   = []byte("tables")
	bLoads    = []byte("loads")
	bRequests = []byte("requests")

	kMagic   = []byte("magic")
	kVersion = []byte("schema")
	kToken   = []byte("token_sha256")
	kCreated = []byte("created")
	kCurrent = []byte("current")
	kNextJob = []byte("next_job")
	kShown   = []byte("token_shown")
	kRules   = []byte("rules")
	kMetaSum = []byte("crc32c")

	magic = []byte("icn-fabric-manager")
)

// schemaVersion 6 may hold tables' routes in version 3 of routing's
// stored form (a table repaired after a failure: version 2 with some
// routes replaced); 5 writes tables' routes in version 2 of routing's stored
// form (a fraction of a byte a route, against about seven; its readers
// read both versions); 4 keeps the running jobs' link loads (the loads
// bucket); 3 covers the meta bucket with a checksum and keeps the answers to
// requests with ids; 2 framed every record and moved job tables' routes
// to the tables bucket; stores of schemas 1 to 5 are still read, and are
// migrated when a service opens them.
const schemaVersion = 6

// oldestSchema is the oldest schema version the store still reads.
const oldestSchema = 1

// maxJobID is the largest job id the store hands out: ids travel as JSON
// numbers, exact in every client only up to 2^53 − 1.
const maxJobID = 1<<53 - 1

// storeBuckets lists the buckets a store of schema v has besides meta.
func storeBuckets(v uint64) [][]byte {
	switch v {
	case 1:
		return [][]byte{bFabric, bJobs, bGroups, bAudit}
	case 2:
		return [][]byte{bFabric, bJobs, bGroups, bAudit, bTables}
	case 3:
		return [][]byte{bFabric, bJobs, bGroups, bAudit, bTables, bRequests}
	}
	return [][]byte{bFabric, bJobs, bGroups, bAudit, bTables, bRequests, bLoads}
}

// FabricRecord is the persistent description of the fabric: how to build
// it and which links and nodes are currently failed (by name).
type FabricRecord struct {
	Spec        string    `json:"spec"`
	FailedLinks []string  `json:"failed_links"`
	FailedNodes []string  `json:"failed_nodes"`
	Updated     time.Time `json:"updated"`
}

// Outcome is the answer given to a request with an id, kept so that a
// repeated request gets it again.
type Outcome struct {
	Action string          `json:"action"`
	Body   json.RawMessage `json:"body"`
	Time   time.Time       `json:"time"`
}

// ErrDamaged marks stores that fail the consistency check.
var ErrDamaged = errors.New("database damaged")

// ErrForeign is returned for stores that are not icn's.
var ErrForeign = errors.New("not an icn fabric-manager database")

// ErrLocked is returned when another process holds a bbolt file.
var ErrLocked = errors.New("database locked by another process")

// backend is bbolt or etcd under the typed store.
type backend interface {
	view(ctx context.Context, fn func(kvTx) error) (rev int64, err error)
	update(ctx context.Context, fn func(kvTx) error) (rev int64, err error)
	close() error
}

// Store is the fabric manager's store on either backend.
type Store struct {
	b      backend
	bolt   *Bolt // set for a bbolt file
	etcd   *Etcd // set for etcd
	legacy bool  // schema 1 records (bare JSON) may be read
	schema uint64
	// Instance names this instance in the audit log.
	Instance string
	// Now is the clock of the audit log (nil: time.Now).
	Now func() time.Time
	// failWrites, when set, makes every write transaction fail after fn
	// ran (as a full or read-only disk would), for tests; one that blocks
	// holds the transaction open (nil lets it commit). beforeWrite, when
	// set, runs at the start of every write transaction (tests: to
	// notice a write after Close).
	failWrites  atomic.Pointer[func() error]
	beforeWrite atomic.Pointer[func()]
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// Etcd returns the etcd backend (nil on bbolt).
func (s *Store) Etcd() *Etcd { return s.etcd }

// Name is the store's address: the bbolt file or the etcd:// URL.
func (s *Store) Name() string {
	if s.bolt != nil {
		return s.bolt.path
	}
	return s.etcd.cfg.URL()
}

// Kind is "bolt" or "etcd".
func (s *Store) Kind() string {
	if s.bolt != nil {
		return "bolt"
	}
	return "etcd"
}

// SetFailWrites makes every later write transaction fail with fn's
// error after its function ran (nil: writes work again); for tests.
func (s *Store) SetFailWrites(fn func() error) {
	if fn == nil {
		s.failWrites.Store(nil)
		return
	}
	s.failWrites.Store(&fn)
}

// SetBeforeWrite has fn run at the start of every later write
// transaction (nil: nothing); for tests.
func (s *Store) SetBeforeWrite(fn func()) {
	if fn == nil {
		s.beforeWrite.Store(nil)
		return
	}
	s.beforeWrite.Store(&fn)
}

// Close closes the store.
func (s *Store) Close() error { return s.b.close() }

// Tx is one transaction of the store.
type Tx struct {
	kv     kvTx
	write  bool
	actor  string
	now    time.Time
	legacy bool
	schema uint64 // the store's schema when the transaction began
	term   int64
	inst   string
	// metaChanged: the transaction wrote a meta key (its checksum is
	// written again at the end).
	metaChanged bool
}

// View runs fn in a read transaction (one consistent snapshot) and
// returns the revision it read (etcd; the transaction id on bbolt).
func (s *Store) View(ctx context.Context, fn func(*Tx) error) (int64, error) {
	return s.b.view(ctx, func(kv kvTx) error { return fn(&Tx{kv: kv, legacy: s.legacy, schema: s.schema}) })
}

// Update runs fn in one write transaction on behalf of actor and returns
// the revision of the commit; the change is durable when Update returns
// nil. On etcd only the leader writes (ErrNotLeader otherwise).
func (s *Store) Update(ctx context.Context, actor string, fn func(*Tx) error) (int64, error) {
	if before := s.beforeWrite.Load(); before != nil {
		(*before)()
	}
	return s.b.update(ctx, func(kv kvTx) error {
		t := &Tx{kv: kv, write: true, actor: actor, now: s.now(), legacy: s.legacy, schema: s.schema, term: kv.Term(), inst: s.Instance}
		if err := fn(t); err != nil {
			return err
		}
		if t.metaChanged && s.schema >= metaSumsSchema {
			if err := putMetaSums(t.kv); err != nil {
				return err
			}
		}
		if fail := s.failWrites.Load(); fail != nil {
			if err := (*fail)(); err != nil {
				return err // rolls the transaction back
			}
		}
		return nil
	})
}

// ---- meta ----

func (t *Tx) putMeta(k, v []byte) error {
	t.metaChanged = true
	return t.kv.Put(bMeta, k, v)
}

func (t *Tx) deleteMeta(k []byte) error {
	t.metaChanged = true
	return t.kv.Delete(bMeta, k)
}

// The meta bucket's values are not framed (they are read by bbolt
// tools and by older versions); from schema 3 on, the meta key "crc32c"
// holds their checksums instead: for every other meta key in key order,
// the key's length (1 byte), the key and the CRC-32C of its value (4
// bytes, big endian), then the CRC-32C of all of that (4 bytes), so that
// an altered value, an altered, added or deleted key and an altered
// checksum record are each refused with the key named.

// metaSumsSchema is the first schema whose meta bucket is checksummed.
const metaSumsSchema = 3

// metaSums computes the checksum record of the meta bucket.
func metaSums(kv kvTx) ([]byte, error) {
	var out []byte
	err := kv.ForEach(bMeta, nil, func(k, v []byte) error {
		switch {
		case bytes.Equal(k, kMetaSum):
			return nil
		case len(k) > 255:
			return fmt.Errorf("meta key of %d bytes", len(k))
		}
		out = append(out, byte(len(k)))
		out = append(out, k...)
		out = binary.BigEndian.AppendUint32(out, crc32.Checksum(v, castagnoli))
		return nil
	})
	return binary.BigEndian.AppendUint32(out, crc32.Checksum(out, castagnoli)), err
}

// putMetaSums stores the checksum record of the meta bucket.
func putMetaSums(kv kvTx) error {
	sums, err := metaSums(kv)
	if err != nil {
		return err
	}
	return kv.Put(bMeta, kMetaSum, sums)
}

// checkMetaSums checks every value of the meta bucket against its
// checksum record (a store without one passes: the caller knows whether
// its schema needs one).
func checkMetaSums(kv kvTx) error {
	stored, err := kv.Get(bMeta, kMetaSum)
	if err != nil || stored == nil {
		return err
	}
	altered := fmt.Errorf("meta %s: the checksum record was altered", metaKey(kMetaSum))
	n := len(stored) - 4
	if n < 0 || crc32.Checksum(stored[:n], castagnoli) != binary.BigEndian.Uint32(stored[n:]) {
		return altered
	}
	want := map[string]uint32{}
	var keys []string
	for rest := stored[:n]; len(rest) > 0; {
		l := int(rest[0])
		if len(rest) < 1+l+4 {
			return altered
		}
		k := string(rest[1 : 1+l])
		want[k] = binary.BigEndian.Uint32(rest[1+l:])
		keys = append(keys, k)
		rest = rest[1+l+4:]
	}
	seen := map[string]bool{}
	err = kv.ForEach(bMeta, nil, func(k, v []byte) error {
		if bytes.Equal(k, kMetaSum) {
			return nil
		}
		sum, ok := want[string(k)]
		if !ok {
			return fmt.Errorf("meta %s: a key without a checksum: the key was altered or added", metaKey(k))
		}
		if got := crc32.Checksum(v, castagnoli); got != sum {
			return fmt.Errorf("meta %s: checksum mismatch (stored %08x, computed %08x): the value was altered", metaKey(k), sum, got)
		}
		seen[string(k)] = true
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range keys {
		if !seen[k] {
			return fmt.Errorf("meta %s: missing, though its checksum is stored: the key was altered or deleted", metaKey([]byte(k)))
		}
	}
	return nil
}

// metaKey names a meta key: as it is when it is plain ASCII, else
// quoted.
func metaKey(k []byte) string {
	for _, c := range k {
		if c <= ' ' || c > '~' || c == '"' {
			return strconv.Quote(string(k))
		}
	}
	return string(k)
}

// checkMeta checks the meta bucket: its values against their checksums
// (schema 3) first, so that an altered magic or schema version is named
// as such, then each value. It returns the schema version; a bucket
// without icn's magic is ErrForeign.
func checkMeta(kv kvTx) (uint64, error) {
	if err := checkMetaSums(kv); err != nil {
		return 0, err
	}
	m, err := kv.Get(bMeta, kMagic)
	if err != nil {
		return 0, err
	}
	if !bytes.Equal(m, magic) {
		return 0, ErrForeign
	}
	schema, err := readSchema(kv)
	if err != nil {
		return 0, err
	}
	if sums, err := kv.Get(bMeta, kMetaSum); err != nil {
		return 0, err
	} else if schema >= metaSumsSchema && sums == nil {
		return 0, fmt.Errorf("meta schema: the store claims schema %d but has no meta checksums (%s): the schema or the meta bucket was altered", schema, kMetaSum)
	}
	if v, err := kv.Get(bMeta, kToken); err != nil {
		return 0, err
	} else if v != nil && len(v) != 32 {
		return 0, fmt.Errorf("meta %s: the token hash has %d bytes, want 32", kToken, len(v))
	}
	if v, err := kv.Get(bMeta, kCreated); err != nil {
		return 0, err
	} else if v != nil {
		if _, err := time.Parse(time.RFC3339, string(v)); err != nil {
			return 0, fmt.Errorf("meta %s: %q is not a creation time", kCreated, v)
		}
	}
	if _, err := readNextJob(kv); err != nil {
		return 0, err
	}
	return schema, nil
}

// readSchema reads and checks the schema version.
func readSchema(kv kvTx) (uint64, error) {
	v, err := kv.Get(bMeta, kVersion)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("meta schema: the schema version has %d bytes, want 8", len(v))
	}
	n := binary.BigEndian.Uint64(v)
	if n < oldestSchema || n > schemaVersion {
		return 0, fmt.Errorf("meta schema: unsupported schema version %d (this icn reads %d to %d)", n, oldestSchema, schemaVersion)
	}
	return n, nil
}

// readNextJob reads the next job id (1 when none was handed out yet).
func readNextJob(kv kvTx) (uint64, error) {
	v, err := kv.Get(bMeta, kNextJob)
	if err != nil || v == nil {
		return 1, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("meta %s: the next job id has %d bytes, want 8", kNextJob, len(v))
	}
	n := binary.BigEndian.Uint64(v)
	if n < 1 || n > maxJobID {
		return 0, fmt.Errorf("meta %s: the next job id %d is outside 1..%d (2^53−1, the largest id a client's JSON number holds exactly)", kNextJob, n, uint64(maxJobID))
	}
	return n, nil
}

// initMeta writes the meta bucket of a new store.
func (t *Tx) initMeta(created time.Time) error {
	for _, kv := range [][2][]byte{{kMagic, magic}, {kVersion, u64(schemaVersion)}, {kCreated, []byte(created.UTC().Format(time.RFC3339))}} {
		if err := t.putMeta(kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// NextJobID allocates a job id.
func (t *Tx) NextJobID() (int, error) {
	id, err := readNextJob(t.kv)
	if err != nil {
		return 0, err
	}
	if id >= maxJobID {
		return 0, fmt.Errorf("job ids exhausted: the next id would pass %d (2^53−1)", uint64(maxJobID))
	}
	if err := t.putMeta(kNextJob, u64(id+1)); err != nil {
		return 0, err
	}
	return int(id), nil
}

// SetTokenHash stores the hash of the API token.
func (t *Tx) SetTokenHash(h []byte) error { return t.putMeta(kToken, h) }

// TokenHash returns the stored token hash (nil if none).
func (t *Tx) TokenHash() ([]byte, error) { return t.kv.Get(bMeta, kToken) }

// SetTokenShown records whether the token was shown by a serving start.
func (t *Tx) SetTokenShown(shown bool) error {
	if !shown {
		return t.deleteMeta(kShown)
	}
	return t.putMeta(kShown, []byte{1})
}

// TokenShown reports whether the token was shown by a serving start.
func (t *Tx) TokenShown() (bool, error) {
	v, err := t.kv.Get(bMeta, kShown)
	return v != nil, err
}

// Rules returns the routing rule the store's instances agreed on ("" if
// none was recorded).
func (t *Tx) Rules() (string, error) {
	v, err := t.kv.Get(bMeta, kRules)
	return string(v), err
}

// SetRules records the routing rule of the store's instances.
func (t *Tx) SetRules(r string) error { return t.putMeta(kRules, []byte(r)) }

// ---- records ----

func (t *Tx) record(v []byte) ([]byte, error) { return unframeRecord(v, t.legacy) }

func (t *Tx) putJSON(bucket, key []byte, v any) error {
	data, err := client.MarshalJSON(v)
	if err != nil {
		return err
	}
	return t.kv.Put(bucket, key, frameRecord(data))
}

// Log appends an audit event in the transaction.
func (t *Tx) Log(action, subject string, detail any) error {
	seq, err := t.kv.NextSequence(bAudit)
	if err != nil {
		return err
	}
	ev := client.Event{Seq: seq, Time: t.now, Actor: t.actor, Action: action, Subject: subject, Term: t.term, Instance: t.inst}
	if detail != nil {
		if ev.Detail, err = json.Marshal(detail); err != nil {
			return err
		}
	}
	return t.putJSON(bAudit, u64(seq), ev)
}

// Events returns audit events with seq > after, at most limit of them.
func (t *Tx) Events(after uint64, limit int) ([]client.Event, error) {
	var out []client.Event
	errStop := errors.New("stop")
	err := t.kv.ForEach(bAudit, u64(after+1), func(k, v []byte) error {
		if len(out) >= limit {
			return errStop
		}
		var e client.Event
		data, err := t.record(v)
		if err == nil {
			err = json.Unmarshal(data, &e)
		}
		if err != nil {
			return fmt.Errorf("audit entry %s: %v", keyName(k), err)
		}
		out = append(out, e)
		return nil
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return out, err
}

// PutFabric stores the fabric record.
func (t *Tx) PutFabric(f FabricRecord) error { return t.putJSON(bFabric, kCurrent, f) }

// Fabric reads the fabric record (ok false if none yet).
func (t *Tx) Fabric() (f FabricRecord, ok bool, err error) {
	v, err := t.kv.Get(bFabric, kCurrent)
	if err != nil || v == nil {
		return f, false, err
	}
	data, err := t.record(v)
	if err != nil {
		return f, true, fmt.Errorf("fabric record: %v", err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return f, true, fmt.Errorf("fabric record: %v", err)
	}
	return f, true, nil
}

// PutJob stores a job: its record, and its table's routes apart. routes
// are the table's routes already encoded (routing.EncodeStoredRoutes, done before the
// transaction); nil takes the job's StoredRoutes for a table without
// routes, else encodes them here. A job without a table loses its
// stored routes. Either way the job's stored link loads, which were
// those of the routes replaced, are dropped (PutJobLoads stores the new
// ones).
func (t *Tx) PutJob(j *client.JobRecord, routes []byte) error {
	key := u64(uint64(j.ID))
	if err := t.dropLoads(key); err != nil {
		return err
	}
	if j.Table == nil {
		if err := t.kv.Delete(bTables, key); err != nil {
			return err
		}
		return t.putJSON(bJobs, key, j)
	}
	if routes == nil && j.Table.Routes == nil && j.StoredRoutes != nil {
		routes = j.StoredRoutes // the table kept encoded
	}
	if routes == nil {
		var err error
		if routes, err = routing.EncodeStoredRoutes(j.Table); err != nil {
			return fmt.Errorf("job %d: %v", j.ID, err)
		}
	}
	if v := routesVersion(t.schema); routing.StoredRoutesVersion(routes) > v {
		// A store an older icn may still read (an etcd store is not
		// migrated): the version it reads.
		var err error
		if routes, err = routing.RecodeStoredRoutes(routes, j.Table, v); err != nil {
			return fmt.Errorf("job %d: %v", j.ID, err)
		}
	}
	if err := t.kv.Put(bTables, key, frameRecord(routes)); err != nil {
		return err
	}
	return t.PutJobHead(j)
}

// PutJobHead stores a job's record with its table's header only, the
// routes being stored already (the job keeps the table it had).
func (t *Tx) PutJobHead(j *client.JobRecord) error {
	if j.Table == nil {
		return t.putJSON(bJobs, u64(uint64(j.ID)), j)
	}
	c := *j
	head := *j.Table
	head.Routes = nil
	c.Table = &head
	return t.putJSON(bJobs, u64(uint64(j.ID)), &c)
}

// attachRoutes reads a stored job's routes back into its table (schema 1
// stores kept them in the record).
func (t *Tx) attachRoutes(j *client.JobRecord) error {
	if j.Table == nil || t.legacy {
		return nil
	}
	data, err := t.storedRoutes(j)
	if err != nil {
		return err
	}
	return routing.DecodeStoredRoutes(data, j.Table)
}

// JobsStored calls fn for every stored job in id order with its record
// (its table's header only: no routes), its table's stored routes,
// checksum checked and not yet decoded (routing.DecodeStoredRoutes; nil
// when the job has no table, and in a schema 1 store, whose records hold
// the routes), and their stored link loads (nil when none are stored, or
// when those stored are not tied to these routes, which checkRecords
// reports); the routes are valid only during the call.
func (t *Tx) JobsStored(fn func(j *client.JobRecord, routes []byte, loads *Loads) error) error {
	return t.kv.ForEach(bJobs, nil, func(k, v []byte) error {
		j, err := t.decodeJob(v)
		var routes []byte
		var sum uint32
		var loads *Loads
		if err == nil && j.Table != nil && !t.legacy {
			routes, sum, err = t.storedRoutesSum(j)
		}
		if err == nil && routes != nil {
			var l Loads
			var tied bool
			if l, _, tied, err = t.jobLoads(k, sum); tied {
				loads = &l
			}
		}
		if err != nil {
			return fmt.Errorf("job %s: %v", keyName(k), err)
		}
		return fn(j, routes, loads)
	})
}

// storedRoutes returns (a copy of) the stored routes of a job's table,
// checksum checked.
func (t *Tx) storedRoutes(j *client.JobRecord) ([]byte, error) {
	data, _, err := t.storedRoutesSum(j)
	return slices.Clone(data), err
}

// storedRoutesSum is storedRoutes in place (valid during the
// transaction only) with the routes' checksum.
func (t *Tx) storedRoutesSum(j *client.JobRecord) ([]byte, uint32, error) {
	v, err := t.kv.Peek(bTables, u64(uint64(j.ID)))
	if err != nil {
		return nil, 0, err
	}
	if v == nil {
		return nil, 0, errNoRoutes
	}
	data, err := t.record(v)
	if err != nil {
		return nil, 0, fmt.Errorf("routes: %v", err)
	}
	return data, binary.BigEndian.Uint32(v[1:5]), nil
}

// Job reads one stored job with its routes (nil if there is none).
func (t *Tx) Job(id int) (*client.JobRecord, error) {
	v, err := t.kv.Get(bJobs, u64(uint64(id)))
	if err != nil || v == nil {
		return nil, err
	}
	j, err := t.decodeJob(v)
	if err == nil {
		err = t.attachRoutes(j)
	}
	if err != nil {
		return nil, fmt.Errorf("job %d: %v", id, err)
	}
	return j, nil
}

func (t *Tx) decodeJob(v []byte) (*client.JobRecord, error) {
	var j client.JobRecord
	data, err := t.record(v)
	if err == nil {
		err = j.UnmarshalJSON(data) // one pass less than json.Unmarshal
	}
	return &j, err
}

// Jobs calls fn for every stored job in id order, with its table's
// routes only if routes is set (the record keeps the table's header).
func (t *Tx) Jobs(routes bool, fn func(*client.JobRecord) error) error {
	return t.kv.ForEach(bJobs, nil, func(k, v []byte) error {
		j, err := t.decodeJob(v)
		if err == nil && routes {
			err = t.attachRoutes(j)
		}
		if err != nil {
			return fmt.Errorf("job %s: %v", keyName(k), err)
		}
		return fn(j)
	})
}

// PutGroup stores a multicast group.
func (t *Tx) PutGroup(g *client.GroupRecord) error { return t.putJSON(bGroups, []byte(g.ID), g) }

// DeleteGroup removes a multicast group.
func (t *Tx) DeleteGroup(id string) error { return t.kv.Delete(bGroups, []byte(id)) }

// Groups calls fn for every stored group, in id order.
func (t *Tx) Groups(fn func(*client.GroupRecord) error) error {
	return t.kv.ForEach(bGroups, nil, func(k, v []byte) error {
		var g client.GroupRecord
		data, err := t.record(v)
		if err == nil {
			err = json.Unmarshal(data, &g)
		}
		if err != nil {
			return fmt.Errorf("group %q: %v", k, err)
		}
		return fn(&g)
	})
}

// Request returns the answer kept for a request id (nil if none).
func (t *Tx) Request(id string) (*Outcome, error) {
	if t.legacy {
		return nil, nil
	}
	v, err := t.kv.Get(bRequests, []byte(id))
	if err != nil || v == nil {
		return nil, err
	}
	data, err := t.record(v)
	if err != nil {
		return nil, fmt.Errorf("request %q: %v", id, err)
	}
	var o Outcome
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, fmt.Errorf("request %q: %v", id, err)
	}
	return &o, nil
}

// PutRequest keeps the answer to a request id; the transaction fails
// with ErrExists (writing nothing) if one is kept for id already: a
// repeated request must get the first answer, not make a second change.
func (t *Tx) PutRequest(id string, o Outcome) error {
	if err := t.kv.Absent(bRequests, []byte(id)); err != nil {
		return err
	}
	if o.Time.IsZero() {
		o.Time = t.now
	}
	return t.putJSON(bRequests, []byte(id), o)
}

// ExpireRequests deletes the answers kept for requests older than
// before; it returns how many it deleted.
func (t *Tx) ExpireRequests(before time.Time, limit int) (int, error) {
	var old [][]byte
	err := t.kv.ForEach(bRequests, nil, func(k, v []byte) error {
		data, err := t.record(v)
		if err != nil {
			return fmt.Errorf("request %q: %v", k, err)
		}
		var o Outcome
		if err := json.Unmarshal(data, &o); err != nil {
			return fmt.Errorf("request %q: %v", k, err)
		}
		if o.Time.Before(before) && len(old) < limit {
			old = append(old, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, k := range old {
		if err := t.kv.Delete(bRequests, k); err != nil {
			return 0, err
		}
	}
	return len(old), nil
}

// keyName names a record by its key: ids and sequence numbers (8 bytes,
// big endian) in decimal, other keys quoted.
func keyName(k []byte) string {
	if len(k) == 8 {
		return fmt.Sprint(binary.BigEndian.Uint64(k))
	}
	return fmt.Sprintf("%q", k)
}

// OpenEtcdStore connects to the store at cfg. empty reports that the
// prefix holds no store yet (Init creates one). A prefix that holds keys
// but no icn store, or a store whose meta is not icn's, is refused.
func OpenEtcdStore(ctx context.Context, cfg EtcdConfig) (s *Store, empty bool, err error) {
	e, err := OpenEtcd(ctx, cfg)
	if err != nil {
		return nil, false, err
	}
	s = &Store{b: e, etcd: e, schema: schemaVersion}
	fail := func(err error) (*Store, bool, error) {
		e.Close()
		return nil, false, err
	}
	resp, err := e.cli.Get(ctx, e.pre+"meta/magic")
	if err != nil {
		return fail(e.wrap(err))
	}
	if len(resp.Kvs) == 0 {
		all, err := e.cli.Get(ctx, e.pre, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return fail(e.wrap(err))
		}
		cand, err := e.cli.Get(ctx, e.pre+"election/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return fail(e.wrap(err))
		}
		if n := all.Count - cand.Count; n > 0 {
			return fail(fmt.Errorf("%s: %w: the prefix holds %d keys but no icn store (give another prefix)", cfg.URL(), ErrForeign, n))
		}
		return s, true, nil
	}
	if _, err := s.View(ctx, func(t *Tx) error {
		v, err := checkMeta(t.kv)
		s.schema = v
		return err
	}); err != nil {
		if errors.Is(err, ErrForeign) || errors.Is(err, ErrUnavailable) {
			return fail(fmt.Errorf("%s: %w", cfg.URL(), err))
		}
		return fail(fmt.Errorf("%s: %w: %v; nothing was written", cfg.URL(), ErrDamaged, err))
	}
	return s, false, nil
}

// Init creates the store of an empty etcd prefix: its meta bucket and
// whatever fn writes (the fabric, the token hash), in one transaction
// that commits only if no other instance created the store first
// (created false then, and nothing was written).
func (s *Store) Init(ctx context.Context, fn func(*Tx) error) (created bool, err error) {
	if s.etcd == nil {
		return false, fmt.Errorf("Init is for etcd stores (a bbolt file is created by OpenBolt)")
	}
	now := s.now()
	return s.etcd.create(ctx, func(kv kvTx) error {
		t := &Tx{kv: kv, write: true, actor: "system", now: now, inst: s.Instance}
		if err := t.initMeta(now); err != nil {
			return err
		}
		if err := fn(t); err != nil {
			return err
		}
		return putMetaSums(t.kv)
	})
}

// Change is what one committed transaction changed, as a follower of an
// etcd store sees it (DecodeEvents).
type Change struct {
	// Fabric is the new fabric record (nil: unchanged).
	Fabric *FabricRecord
	// Jobs are the job records written (tables with their headers only).
	Jobs map[int]*client.JobRecord
	// Routes are the tables' routes written (decoded with routing.DecodeStoredRoutes
	// into the job's table); a nil value: the job's routes were deleted.
	Routes map[int][]byte
	// Groups are the group records written; a nil value: deleted.
	Groups map[string]*client.GroupRecord
	// Token is the token hash when it changed.
	Token []byte
}

// DecodeEvents checks and decodes the events of one revision of an etcd
// store (Etcd.Follow) into the records they change.
func DecodeEvents(evs []Event) (*Change, error) {
	ch := &Change{}
	t := &Tx{}
	for _, e := range evs {
		key := []byte(e.Key)
		switch e.Bucket {
		case string(bFabric):
			if e.Value == nil || string(key) != string(kCurrent) {
				return nil, fmt.Errorf("fabric record deleted or misnamed (%q)", key)
			}
			data, err := unframeRecord(e.Value, false)
			if err != nil {
				return nil, fmt.Errorf("fabric record: %v", err)
			}
			var f FabricRecord
			if err := json.Unmarshal(data, &f); err != nil {
				return nil, fmt.Errorf("fabric record: %v", err)
			}
			ch.Fabric = &f
		case string(bJobs):
			if e.Value == nil {
				return nil, fmt.Errorf("job %s deleted", keyName(key))
			}
			j, err := t.decodeJob(e.Value)
			if err != nil {
				return nil, fmt.Errorf("job %s: %v", keyName(key), err)
			}
			if ch.Jobs == nil {
				ch.Jobs = map[int]*client.JobRecord{}
			}
			ch.Jobs[j.ID] = j
		case string(bTables):
			if len(key) != 8 {
				return nil, fmt.Errorf("routes under key %q", key)
			}
			id := int(binary.BigEndian.Uint64(key))
			if ch.Routes == nil {
				ch.Routes = map[int][]byte{}
			}
			if e.Value == nil {
				ch.Routes[id] = nil
				continue
			}
			data, err := unframeRecord(e.Value, false)
			if err != nil {
				return nil, fmt.Errorf("routes of job %d: %v", id, err)
			}
			ch.Routes[id] = data
		case string(bGroups):
			if ch.Groups == nil {
				ch.Groups = map[string]*client.GroupRecord{}
			}
			if e.Value == nil {
				ch.Groups[string(key)] = nil
				continue
			}
			data, err := unframeRecord(e.Value, false)
			if err != nil {
				return nil, fmt.Errorf("group %q: %v", key, err)
			}
			var g client.GroupRecord
			if err := json.Unmarshal(data, &g); err != nil {
				return nil, fmt.Errorf("group %q: %v", key, err)
			}
			ch.Groups[g.ID] = &g
		case string(bMeta):
			if string(key) == string(kToken) && e.Value != nil {
				ch.Token = e.Value
			}
		}
	}
	return ch, nil
}
