package fm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// Every record the store keeps in the fabric, jobs, groups and audit
// buckets is framed as
//
//	0x01 | CRC-32C of the JSON (4 bytes, big endian) | JSON
//
// and checked on every read, so a record altered on disk into other
// valid JSON is refused with its name instead of served. Stores of
// schema 1 kept bare JSON; they are accepted and rewritten framed
// (migrate) when a service opens them.
const recordFrame = 0x01

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// frameRecord frames a record's JSON.
func frameRecord(data []byte) []byte {
	out := make([]byte, 5+len(data))
	out[0] = recordFrame
	binary.BigEndian.PutUint32(out[1:5], crc32.Checksum(data, castagnoli))
	copy(out[5:], data)
	return out
}

// unframeRecord returns a stored record's JSON after checking its
// checksum; legacy (schema 1) allows bare JSON.
func unframeRecord(v []byte, legacy bool) ([]byte, error) {
	if len(v) > 0 && v[0] == '{' && legacy {
		return v, nil
	}
	if len(v) < 5 || v[0] != recordFrame {
		return nil, fmt.Errorf("not a framed record (%d bytes)", len(v))
	}
	data := v[5:]
	if want, got := binary.BigEndian.Uint32(v[1:5]), crc32.Checksum(data, castagnoli); want != got {
		return nil, fmt.Errorf("checksum mismatch (stored %08x, computed %08x): the record was altered", want, got)
	}
	return data, nil
}

// The meta bucket's values are not framed (they are read by bbolt
// tools and by older versions); from schema 3 on, the meta key "crc32c"
// holds their checksums instead: for every other meta key in key order,
// the key's length (1 byte), the key and the CRC-32C of its value (4
// bytes, big endian), then the CRC-32C of all of that (4 bytes), so that
// an altered value, an altered, added or deleted key and an altered
// checksum record are each refused with the key named.

// metaSums computes the checksum record of the meta bucket m.
func metaSums(m *bolt.Bucket) ([]byte, error) {
	var out []byte
	err := m.ForEach(func(k, v []byte) error {
		switch {
		case bytes.Equal(k, kMetaSum):
			return nil
		case v == nil:
			return fmt.Errorf("meta %s: nested bucket where a value belongs", metaKey(k))
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

// putMetaSums stores the checksum record of the meta bucket m.
func putMetaSums(m *bolt.Bucket) error {
	sums, err := metaSums(m)
	if err != nil {
		return err
	}
	return m.Put(kMetaSum, sums)
}

// checkMetaSums checks every value of the meta bucket m against its
// checksum record (a store without one passes: the caller knows whether
// its schema needs one).
func checkMetaSums(m *bolt.Bucket) error {
	stored := m.Get(kMetaSum)
	if stored == nil {
		return nil
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
	err := m.ForEach(func(k, v []byte) error {
		if bytes.Equal(k, kMetaSum) {
			return nil
		}
		sum, ok := want[string(k)]
		if !ok || v == nil {
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
