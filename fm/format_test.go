package fm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	bolt "go.etcd.io/bbolt"
)

// The bbolt store's format, as the tests that alter files write it (an
// oracle kept apart from fm/store's code).
var (
	bMeta     = []byte("meta")
	bFabric   = []byte("fabric")
	bJobs     = []byte("jobs")
	bGroups   = []byte("groups")
	bAudit    = []byte("audit")
	bTables   = []byte("tables")
	bLoads    = []byte("loads")
	bRequests = []byte("requests")

	kVersion = []byte("schema")
	kToken   = []byte("token_sha256")
	kCreated = []byte("created")
	kCurrent = []byte("current")
	kNextJob = []byte("next_job")
	kMetaSum = []byte("crc32c")
)

// schemaVersion is the schema the store writes.
const schemaVersion = 6

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// frameRecord frames a record's JSON: 0x01, its CRC-32C, the JSON.
func frameRecord(data []byte) []byte {
	out := []byte{0x01}
	out = binary.BigEndian.AppendUint32(out, crc32.Checksum(data, castagnoli))
	return append(out, data...)
}

// unframeRecord returns a framed record's JSON (bare JSON of schema 1
// if legacy), its checksum checked.
func unframeRecord(v []byte, legacy bool) ([]byte, error) {
	if legacy && len(v) > 0 && v[0] == '{' {
		return v, nil
	}
	if len(v) < 5 || v[0] != 0x01 {
		return nil, fmt.Errorf("not a framed record")
	}
	if binary.BigEndian.Uint32(v[1:5]) != crc32.Checksum(v[5:], castagnoli) {
		return nil, fmt.Errorf("checksum mismatch")
	}
	return v[5:], nil
}

// metaSums is the meta bucket's checksum record as the store writes it:
// per key but the record's own, in key order, the key's length (1 byte),
// the key and the CRC-32C of its value, then the CRC-32C of all that.
func metaSums(m *bolt.Bucket) []byte {
	var out []byte
	m.ForEach(func(k, v []byte) error {
		if !bytes.Equal(k, kMetaSum) {
			out = append(out, byte(len(k)))
			out = append(out, k...)
			out = binary.BigEndian.AppendUint32(out, crc32.Checksum(v, castagnoli))
		}
		return nil
	})
	return binary.BigEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
}

// putMetaSums writes the meta bucket's checksum record.
func putMetaSums(m *bolt.Bucket) error { return m.Put(kMetaSum, metaSums(m)) }

// checkMetaSums reports whether the checksum record matches the values.
func checkMetaSums(m *bolt.Bucket) error {
	if !bytes.Equal(m.Get(kMetaSum), metaSums(m)) {
		return fmt.Errorf("meta checksums do not match the values")
	}
	return nil
}

// storeSchema reads the schema version.
func storeSchema(m *bolt.Bucket) (uint64, error) {
	v := m.Get(kVersion)
	if len(v) != 8 {
		return 0, fmt.Errorf("schema version of %d bytes", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
