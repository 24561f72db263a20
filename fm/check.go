package fm

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// ErrDamaged marks database files that fail the consistency check.
var ErrDamaged = errors.New("database damaged")

// CheckFile checks a whole database file without modifying it: bbolt's
// page-level consistency check (every page reachable or free exactly once)
// and the decoding of every record of every bucket. It opens the file
// read-only; panics of the storage layer on damaged pages come back as
// errors. A nil error means the service can open the file.
func CheckFile(path string) (err error) {
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
	err = db.View(checkTx)
	if err != nil && !errors.Is(err, ErrForeign) {
		return fmt.Errorf("%s: %w: %v; the file was not modified", path, ErrDamaged, err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// checkTx runs bbolt's check and decodes every record in one read
// transaction.
func checkTx(tx *bolt.Tx) error {
	if err := checkRecordsTx(tx); err != nil {
		return err
	}
	// Drain the channel so the checking goroutine ends; report the first
	// problem.
	var first error
	for err := range tx.Check() {
		if first == nil {
			first = err
		}
	}
	return first
}

// checkRecordsTx decodes every record of every bucket.
func checkRecordsTx(tx *bolt.Tx) error {
	m := tx.Bucket(bMeta)
	if m == nil {
		return ErrForeign
	}
	nextJob, schema, err := checkMeta(m)
	if err != nil {
		return err
	}
	legacy := schema == 1
	for _, b := range storeBuckets(schema) {
		if tx.Bucket(b) == nil {
			return fmt.Errorf("bucket %s missing", b)
		}
	}
	if v := tx.Bucket(bFabric).Get(kCurrent); v != nil {
		var f FabricRecord
		data, err := unframeRecord(v, legacy)
		if err == nil {
			err = json.Unmarshal(data, &f)
		}
		if err != nil {
			return fmt.Errorf("fabric record: %v", err)
		}
	}
	withTable := map[int]bool{}
	if err := checkRecords(tx.Bucket(bJobs), "job", legacy, func(k, data []byte) error {
		var j JobRecord
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
			return (&Tx{tx: tx}).attachRoutes(&j)
		}
		return nil
	}); err != nil {
		return err
	}
	if !legacy {
		if err := checkRecords(tx.Bucket(bTables), "routes of job", false, func(k, _ []byte) error {
			if len(k) != 8 || !withTable[int(binary.BigEndian.Uint64(k))] {
				return fmt.Errorf("no stored job with a table owns them")
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if err := checkRecords(tx.Bucket(bGroups), "group", legacy, func(k, data []byte) error {
		var g GroupRecord
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
	return checkRecords(tx.Bucket(bAudit), "audit entry", legacy, func(k, data []byte) error {
		var e Event
		if err := json.Unmarshal(data, &e); err != nil {
			return err
		}
		if len(k) != 8 || binary.BigEndian.Uint64(k) != e.Seq {
			return fmt.Errorf("key does not match seq %d", e.Seq)
		}
		return nil
	})
}

// checkMeta checks the meta bucket m: its values against their
// checksums (schema 3) first, so that an altered magic or schema version
// is named as such, then each value. It returns the next job id and the
// schema version; a bucket without icn's magic is ErrForeign.
func checkMeta(m *bolt.Bucket) (nextJob, schema uint64, err error) {
	if err := checkMetaSums(m); err != nil {
		return 0, 0, err
	}
	if !bytes.Equal(m.Get(kMagic), magic) {
		return 0, 0, ErrForeign
	}
	if schema, err = storeSchema(m); err != nil {
		return 0, 0, err
	}
	if schema >= metaSumsSchema && m.Get(kMetaSum) == nil {
		return 0, 0, fmt.Errorf("meta schema: the store claims schema %d but has no meta checksums (%s): the schema or the meta bucket was altered", schema, kMetaSum)
	}
	if v := m.Get(kToken); v != nil && len(v) != 32 {
		return 0, 0, fmt.Errorf("meta %s: the token hash has %d bytes, want 32", kToken, len(v))
	}
	if v := m.Get(kCreated); v != nil {
		if _, err := time.Parse(time.RFC3339, string(v)); err != nil {
			return 0, 0, fmt.Errorf("meta %s: %q is not a creation time", kCreated, v)
		}
	}
	nextJob = 1
	if v := m.Get(kNextJob); v != nil {
		if len(v) != 8 {
			return 0, 0, fmt.Errorf("meta %s: the next job id has %d bytes, want 8", kNextJob, len(v))
		}
		nextJob = binary.BigEndian.Uint64(v)
		if nextJob < 1 || nextJob > maxNextJob {
			return 0, 0, fmt.Errorf("meta %s: the next job id %d is outside 1..%d (2^53−1, the largest id a client's JSON number holds exactly)", kNextJob, nextJob, uint64(maxNextJob))
		}
	}
	return nextJob, schema, nil
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

// checkRecords checks every record of b: its checksum (bare JSON only
// in a schema 1 store), then fn on its JSON.
func checkRecords(b *bolt.Bucket, what string, legacy bool, fn func(k, data []byte) error) error {
	return b.ForEach(func(k, v []byte) error {
		if v == nil {
			return fmt.Errorf("%s %s: nested bucket where a record belongs", what, keyName(k))
		}
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

// Backup writes a consistent copy of the database (one read transaction:
// writers continue meanwhile) to w and returns its size; size, if not nil,
// learns the size before the first byte is written.
func (s *Store) Backup(w io.Writer, size func(int64)) (n int64, err error) {
	err = s.View(func(t *Tx) error {
		if size != nil {
			size(t.tx.Size())
		}
		var werr error
		n, werr = t.tx.WriteTo(w)
		return werr
	})
	return n, err
}

// BackupFile writes a consistent copy of the database to path: first to a
// temporary file next to it, synced, checked, then renamed into place, so
// path never holds a partial copy.
func BackupFile(w func(io.Writer) (int64, error), path string) (int64, error) {
	tmp, err := os.CreateTemp(dirOf(path), ".icn-backup-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	n, err := w(tmp)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	if err := CheckFile(tmp.Name()); err != nil {
		return 0, fmt.Errorf("the copy does not pass the check: %v", err)
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return 0, err
	}
	return n, os.Rename(tmp.Name(), path)
}

func dirOf(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if os.IsPathSeparator(path[i]) {
			return path[:i+1]
		}
	}
	return "."
}

// keyName names a record by its key: ids and sequence numbers (8 bytes,
// big endian) in decimal, other keys quoted.
func keyName(k []byte) string {
	if len(k) == 8 {
		return fmt.Sprint(binary.BigEndian.Uint64(k))
	}
	return fmt.Sprintf("%q", k)
}
