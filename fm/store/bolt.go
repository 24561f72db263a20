package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/internal/atomicfile"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Bolt is the bbolt backend: one file, each change one bbolt
// transaction, fsync'ed on commit.
type Bolt struct {
	db   *bolt.DB
	path string
}

func (b *Bolt) close() error { return b.db.Close() }

func (b *Bolt) view(ctx context.Context, fn func(kvTx) error) (rev int64, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverStore(&err)
	err = b.db.View(func(tx *bolt.Tx) error {
		rev = int64(tx.ID())
		return fn(&boltKV{tx: tx})
	})
	return rev, err
}

func (b *Bolt) update(ctx context.Context, fn func(kvTx) error) (rev int64, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer recoverStore(&err)
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	err = b.db.Update(func(tx *bolt.Tx) error {
		rev = int64(tx.ID())
		return fn(&boltKV{tx: tx})
	})
	return rev, err
}

// recoverStore turns a panic of the storage layer (bbolt panics on pages
// it cannot read) into an error.
func recoverStore(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%w: %v", ErrDamaged, p)
	}
}

// boltKV is a bbolt transaction as a kvTx.
type boltKV struct{ tx *bolt.Tx }

func (k *boltKV) bucket(name []byte) (*bolt.Bucket, error) {
	b := k.tx.Bucket(name)
	if b == nil {
		return nil, fmt.Errorf("bucket %s missing", name)
	}
	return b, nil
}

func (k *boltKV) Get(bucket, key []byte) ([]byte, error) {
	b, err := k.bucket(bucket)
	if err != nil {
		return nil, err
	}
	v := b.Get(key)
	if v == nil {
		return nil, nil
	}
	return bytes.Clone(v), nil
}

func (k *boltKV) Peek(bucket, key []byte) ([]byte, error) {
	b, err := k.bucket(bucket)
	if err != nil {
		return nil, err
	}
	return b.Get(key), nil
}

func (k *boltKV) Put(bucket, key, value []byte) error {
	b, err := k.bucket(bucket)
	if err != nil {
		return err
	}
	return b.Put(key, value)
}

func (k *boltKV) Delete(bucket, key []byte) error {
	b, err := k.bucket(bucket)
	if err != nil {
		return err
	}
	return b.Delete(key)
}

func (k *boltKV) ForEach(bucket, from []byte, fn func(k, v []byte) error) error {
	b, err := k.bucket(bucket)
	if err != nil {
		return err
	}
	c := b.Cursor()
	var key, v []byte
	if from == nil {
		key, v = c.First()
	} else {
		key, v = c.Seek(from)
	}
	for ; key != nil; key, v = c.Next() {
		if v == nil {
			return fmt.Errorf("bucket %s: nested bucket %s where a record belongs", bucket, keyName(key))
		}
		if err := fn(key, v); err != nil {
			return err
		}
	}
	return nil
}

func (k *boltKV) NextSequence(bucket []byte) (uint64, error) {
	b, err := k.bucket(bucket)
	if err != nil {
		return 0, err
	}
	return b.NextSequence()
}

func (k *boltKV) Sequence(bucket []byte) (uint64, error) {
	b, err := k.bucket(bucket)
	if err != nil {
		return 0, err
	}
	return b.Sequence(), nil
}

func (k *boltKV) SetSequence(bucket []byte, n uint64) error {
	b, err := k.bucket(bucket)
	if err != nil {
		return err
	}
	return b.SetSequence(n)
}

func (k *boltKV) Term() int64 { return 0 }

func (k *boltKV) Absent(bucket, key []byte) error {
	b, err := k.bucket(bucket)
	if err != nil {
		return err
	}
	if b.Get(key) != nil {
		return fmt.Errorf("%w: %s %q", ErrExists, bucket, key)
	}
	return nil
}

// OpenBolt opens (or creates) a bbolt store. An existing file that is
// not a valid bbolt database, or is one written by something else, or
// fails the check (CheckFile; routes tied to stored link loads are not
// walked again, see checkRecords), is refused and never modified.
// created reports whether the file is new.
func OpenBolt(path string) (s *Store, created bool, err error) {
	defer recoverStore(&err)
	_, statErr := os.Stat(path)
	created = errors.Is(statErr, os.ErrNotExist)
	if !created && statErr != nil {
		return nil, false, statErr
	}
	if !created {
		if err := checkFile(path, true); err != nil {
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
	b := &Bolt{db: db, path: path}
	s = &Store{b: b, bolt: b, schema: schemaVersion}
	if created {
		_, err = s.Update(context.Background(), "system", func(t *Tx) error {
			btx := t.kv.(*boltKV).tx
			for _, name := range append([][]byte{bMeta}, storeBuckets(schemaVersion)...) {
				if _, err := btx.CreateBucket(name); err != nil {
					return err
				}
			}
			return t.initMeta(time.Now())
		})
		if err != nil {
			db.Close()
			os.Remove(path)
			return nil, false, fmt.Errorf("cannot initialise database %s: %v", path, err)
		}
		return s, true, nil
	}
	if err := s.readHeader(); err != nil {
		db.Close()
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	return s, false, nil
}

// readHeader reads the schema of an existing store (checked already)
// and checks that its buckets are there.
func (s *Store) readHeader() error {
	_, err := s.View(context.Background(), func(t *Tx) error {
		v, err := checkMeta(t.kv)
		if err != nil {
			return err
		}
		s.schema, s.legacy = v, v == 1
		btx := t.kv.(*boltKV).tx
		for _, b := range storeBuckets(v) {
			if btx.Bucket(b) == nil {
				return fmt.Errorf("bucket %s missing: database damaged", b)
			}
		}
		return nil
	})
	return err
}

// OpenBoltReadOnly checks an existing bbolt store and opens it read-only
// (for checks and backups of a database no service holds).
func OpenBoltReadOnly(path string) (s *Store, err error) {
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
	b := &Bolt{db: db, path: path}
	s = &Store{b: b, bolt: b}
	if err := s.readHeader(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Migrate rewrites a store of an older schema (checked already) as the
// current schema, in one transaction: after a crash the file is either
// still of its old schema or wholly of the new one. Schema 1 records
// are framed and job tables' routes moved to the tables bucket; schema
// 2 stores gain the requests bucket and the meta checksum, stores
// before schema 4 the loads bucket (empty: the next start counts the
// loads and stores them), and stores before schema 5 have their routes
// written again in version 2 of the stored form (recodeRoutes; the next
// start compacts the file the old routes leave sparse).
func (s *Store) Migrate() error {
	if s.bolt == nil || s.schema == schemaVersion {
		return nil
	}
	_, err := s.Update(context.Background(), "system", func(t *Tx) error {
		btx := t.kv.(*boltKV).tx
		if s.schema == 1 {
			if err := migrateFrames(btx); err != nil {
				return err
			}
			if _, err := btx.CreateBucketIfNotExists(bTables); err != nil {
				return err
			}
			// Jobs: their routes move to the tables bucket.
			t.legacy = true
			var jobs []*client.JobRecord
			if err := t.Jobs(true, func(j *client.JobRecord) error { jobs = append(jobs, j); return nil }); err != nil {
				return err
			}
			t.legacy = false
			for _, j := range jobs {
				if err := t.PutJob(j, nil); err != nil {
					return err
				}
			}
		}
		for _, b := range [][]byte{bRequests, bLoads} {
			if _, err := btx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		old := t.schema
		t.schema = schemaVersion
		if old < routesV2Schema {
			if err := t.recodeRoutes(); err != nil {
				return err
			}
		}
		if err := t.putMeta(kVersion, u64(schemaVersion)); err != nil {
			return err
		}
		return putMetaSums(t.kv)
	})
	if err == nil {
		s.schema, s.legacy = schemaVersion, false
	}
	return err
}

// migrateFrames frames the bare JSON records of a schema 1 store's
// fabric, groups and audit buckets.
func migrateFrames(btx *bolt.Tx) error {
	for _, name := range [][]byte{bFabric, bGroups, bAudit} {
		b := btx.Bucket(name)
		var keys, vals [][]byte
		if err := b.ForEach(func(k, v []byte) error {
			data, err := unframeRecord(v, true)
			if err != nil {
				return fmt.Errorf("%s %s: %v", name, keyName(k), err)
			}
			keys, vals = append(keys, bytes.Clone(k)), append(vals, frameRecord(data))
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
	return nil
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
	return &foreignError{fmt.Sprintf("%s is not an icn database (not a bbolt file); refusing to open it, the file was not modified", path)}
}

// foreignError is a file that is not an icn database (errors.Is
// ErrForeign), with its own message.
type foreignError struct{ msg string }

func (e *foreignError) Error() string        { return e.msg }
func (e *foreignError) Is(target error) bool { return target == ErrForeign }

// compactShare is the share of free pages above which a start compacts
// the database (a file under compactMin is left as it is).
const (
	compactShare = 0.5
	compactMin   = 4 << 20
)

// CompactIfSparse rewrites a bbolt database into a new file without its
// free pages when they are more than compactShare of the pages in use
// (bbolt never gives pages back to the file system: released jobs'
// tables leave their pages free): the copy is written next to the file,
// synced, checked like any database and renamed over it, so a crash
// leaves either the old file or the new one. It returns the sizes
// before and after (equal when nothing was done, and on etcd).
func (s *Store) CompactIfSparse() (before, after int64, err error) {
	b := s.bolt
	if b == nil {
		return 0, 0, nil
	}
	fi, err := os.Stat(b.path)
	if err != nil {
		return 0, 0, err
	}
	before = fi.Size()
	var used int64 // pages up to the high-water mark
	err = b.db.View(func(tx *bolt.Tx) error {
		used = tx.Size()
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	st := b.db.Stats()
	// Free pages among those in use; the file's tail that bbolt grows
	// ahead of them is not counted (the next writes would grow it again).
	free := int64(st.FreePageN+st.PendingPageN) * int64(b.db.Info().PageSize)
	if before < compactMin || float64(free) <= compactShare*float64(used) {
		return before, before, nil
	}
	tmp := b.path + ".compact"
	os.Remove(tmp)
	dst, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return before, before, fmt.Errorf("compacting %s: %v", b.path, err)
	}
	if err := bolt.Compact(dst, b.db, 64<<20); err != nil {
		dst.Close()
		os.Remove(tmp)
		return before, before, fmt.Errorf("compacting %s: %v (the database was not changed)", b.path, err)
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		os.Remove(tmp)
		return before, before, err
	}
	dst.Close()
	if err := CheckFile(tmp); err != nil {
		os.Remove(tmp)
		return before, before, fmt.Errorf("compacted copy of %s failed its check: %v (the database was not changed)", b.path, err)
	}
	if err := b.db.Close(); err != nil {
		return before, before, err
	}
	if err := os.Rename(tmp, b.path); err != nil {
		os.Remove(tmp)
	} else if d, err := os.Open(dirOf(b.path)); err == nil {
		d.Sync()
		d.Close()
	}
	db, err := bolt.Open(b.path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		return before, before, fmt.Errorf("reopening %s after compaction: %v", b.path, err)
	}
	b.db = db
	if fi, err := os.Stat(b.path); err == nil {
		after = fi.Size()
	}
	return before, after, nil
}

// CheckFile checks a whole bbolt database file without modifying it: its
// pages, read directly (both meta pages, the freelist, every B+ tree
// page reachable from the root), then every record of every bucket
// (checkRecords, the same checks an etcd store gets), then bbolt's own
// page-level check (every page reachable or free exactly once). It opens
// the file read-only; panics of the storage layer on damaged pages come
// back as errors. A nil error means a service can open the file.
func CheckFile(path string) (err error) {
	return checkFile(path, false)
}

// checkFile is CheckFile; with tied, as a service's start checks, the
// routes tied to stored link loads are not walked (checkRecords).
func checkFile(path string, tied bool) (err error) {
	if err := checkHeader(path); err != nil {
		return err
	}
	if err := checkPages(path); err != nil {
		return fmt.Errorf("%s: %w: %v; the file was not modified", path, ErrDamaged, err)
	}
	// A page that points outside the file would fault inside the memory
	// map; make such faults panics of this goroutine (recovered below).
	// The walk of every record below runs here, before bbolt's own check
	// (which runs on a goroutine of its own), and touches every page that
	// check reads except the freelist, which checkPages validated.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: %w: %v; the file was not modified", path, ErrDamaged, p)
		}
	}()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 500 * time.Millisecond})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return fmt.Errorf("%w: %s (is icn serve already running?)", ErrLocked, path)
		}
		return fmt.Errorf("%s: %w: %v; the file was not modified", path, ErrDamaged, err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bMeta) == nil {
			return ErrForeign
		}
		if err := checkRecords(&boltKV{tx: tx}, tied); err != nil {
			return err
		}
		// Drain the channel so the checking goroutine ends; report the
		// first problem.
		var first error
		for err := range tx.Check() {
			if first == nil {
				first = err
			}
		}
		return first
	})
	if errors.Is(err, ErrForeign) {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w: %v; the file was not modified", path, ErrDamaged, err)
	}
	return nil
}

// checkPages validates the two meta pages (checksum), the high-water mark
// against the file size, and the freelist page, reading the file directly
// (no memory map), so that bbolt never follows a page id past the end of
// the file.
func checkPages(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	var best *boltMeta
	var bad []error
	for i := 0; i < 2; i++ {
		m, err := readMeta(f, i)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		if best == nil || m.txid > best.txid {
			best = m
		}
	}
	switch {
	case best == nil:
		return fmt.Errorf("both meta pages are damaged (%v; %v)", bad[0], bad[1])
	case len(bad) > 0:
		// bbolt could still open the file from the other copy, but its
		// own check stops at the damaged one: restore a backup.
		return fmt.Errorf("%v; the other meta page is intact, restore a backup (icn serve backup) rather than serve a file whose meta copy is lost", bad[0])
	}
	ps := int64(best.pageSize)
	if best.hwm < 3 || best.hwm*uint64(ps) > uint64(size) {
		return fmt.Errorf("file truncated or meta page wrong: it claims %d pages of %d bytes, the file has %d bytes", best.hwm, ps, size)
	}
	if best.root < 2 || best.root >= best.hwm {
		return fmt.Errorf("meta page: root page %d outside 2..%d", best.root, best.hwm-1)
	}
	const noFreelist = ^uint64(0)
	if best.freelist != noFreelist {
		if err := checkFreelist(f, best, ps); err != nil {
			return err
		}
	}
	return walkTree(f, best, ps)
}

type boltMeta struct {
	pageSize                        uint32
	root, freelist, hwm, txid, csum uint64
}

// readMeta reads meta page i (bbolt layout: 16-byte page header, then
// magic, version, page size, flags, root bucket (root, sequence),
// freelist, high-water mark, txid, checksum = FNV-64a of what precedes).
func readMeta(f *os.File, i int) (*boltMeta, error) {
	// The first meta page says the page size; meta page 1 lives there.
	hdr := make([]byte, 80)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		return nil, err
	}
	ps := int64(binary.LittleEndian.Uint32(hdr[24:]))
	if i == 1 {
		if ps < 512 || ps > 1<<16 {
			ps = int64(os.Getpagesize())
		}
		if _, err := f.ReadAt(hdr, ps); err != nil {
			return nil, err
		}
	}
	le := binary.LittleEndian
	b := hdr[16:]
	if le.Uint32(b) != 0xED0CDAED || le.Uint32(b[4:]) != 2 {
		return nil, fmt.Errorf("meta page %d: bad magic or version (zeroed or overwritten)", i)
	}
	if id := le.Uint64(hdr); id != uint64(i) {
		return nil, fmt.Errorf("meta page %d identifies itself as page %d", i, id)
	}
	h := fnv.New64a()
	h.Write(b[:56])
	m := &boltMeta{pageSize: le.Uint32(b[8:]), root: le.Uint64(b[16:]), freelist: le.Uint64(b[32:]),
		hwm: le.Uint64(b[40:]), txid: le.Uint64(b[48:]), csum: le.Uint64(b[56:])}
	if h.Sum64() != m.csum {
		return nil, fmt.Errorf("meta page %d: checksum mismatch", i)
	}
	if m.pageSize < 512 || m.pageSize > 1<<16 {
		return nil, fmt.Errorf("meta page %d: page size %d", i, m.pageSize)
	}
	return m, nil
}

// checkFreelist validates the freelist page: its type, that it and its
// overflow pages lie below the high-water mark, and every id it lists.
func checkFreelist(f *os.File, m *boltMeta, ps int64) error {
	if m.freelist < 2 || m.freelist >= m.hwm {
		return fmt.Errorf("meta page: freelist page %d outside 2..%d", m.freelist, m.hwm-1)
	}
	hdr := make([]byte, 24)
	if _, err := f.ReadAt(hdr, int64(m.freelist)*ps); err != nil {
		return err
	}
	le := binary.LittleEndian
	if le.Uint16(hdr[8:]) != 0x10 {
		return fmt.Errorf("page %d is not a freelist page", m.freelist)
	}
	overflow := uint64(le.Uint32(hdr[12:]))
	if m.freelist+overflow >= m.hwm {
		return fmt.Errorf("freelist page %d: %d overflow pages pass the end", m.freelist, overflow)
	}
	count, start := uint64(le.Uint16(hdr[10:])), int64(16)
	if count == 0xFFFF {
		count, start = le.Uint64(hdr[16:]), 24
	}
	if uint64(start)+count*8 > (overflow+1)*uint64(ps) {
		return fmt.Errorf("freelist page %d: %d ids do not fit in %d pages", m.freelist, count, overflow+1)
	}
	ids := make([]byte, count*8)
	if _, err := f.ReadAt(ids, int64(m.freelist)*ps+start); err != nil {
		return err
	}
	for i := uint64(0); i < count; i++ {
		if id := le.Uint64(ids[8*i:]); id < 2 || id >= m.hwm {
			return fmt.Errorf("freelist lists page %d outside 2..%d", id, m.hwm-1)
		}
	}
	return nil
}

// Backup writes a consistent copy of a bbolt database (one read
// transaction: writers continue meanwhile) to w and returns its size;
// size, if not nil, learns the size before the first byte is written.
func (s *Store) Backup(w io.Writer, size func(int64)) (n int64, err error) {
	if s.bolt == nil {
		return 0, fmt.Errorf("a backup file is a copy of a bbolt store; for %s use icn serve store copy --to bolt:FILE", s.Name())
	}
	defer recoverStore(&err)
	err = s.bolt.db.View(func(tx *bolt.Tx) error {
		if size != nil {
			size(tx.Size())
		}
		var werr error
		n, werr = tx.WriteTo(w)
		return werr
	})
	return n, err
}

// BackupFile writes a consistent copy of a database to path: first to a
// temporary file next to it, synced, checked, then renamed into place (mode
// 0600), so path never holds a partial copy; a device or a pipe is written
// through after the check, never replaced (atomicfile.WriteVerified).
func BackupFile(w func(io.Writer) (int64, error), path string) (int64, error) {
	var n int64
	err := atomicfile.WriteVerified(path, 0o600, func(out io.Writer) error {
		var err error
		n, err = w(out)
		return err
	}, func(name string) error {
		if err := CheckFile(name); err != nil {
			return fmt.Errorf("the copy does not pass the check: %v", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

func dirOf(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if os.IsPathSeparator(path[i]) {
			return path[:i+1]
		}
	}
	return "."
}
