package store

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Every record the store keeps is framed as
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

func u64(v uint64) []byte {
	b := make([]byte, 8)
	binary.BigEndian.PutUint64(b, v)
	return b
}
