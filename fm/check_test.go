package fm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"

	bolt "go.etcd.io/bbolt"
)

// damagedDB builds a database with jobs, groups and enough audit entries
// to fill several pages, closes it and returns its bytes.
func damagedDB(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	s, _ := openTest(t, dir, "torus:4x4x4", nil)
	for i := 0; i < 6; i++ {
		if _, err := s.Submit("test", client.JobRequest{Nodes: 2}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 300; i++ {
		if _, err := s.mc.join(context.Background(), "test", client.McastRequest{Group: fmt.Sprintf("g%03d", i), Member: "0.0.0", MemberCount: 3}); err != nil {
			t.Fatal(err)
		}
	}
	return closedStore(t, s, dir)
}

// closedStore closes the service on the database in dir and returns the
// file's path and bytes, which must pass the check.
func closedStore(t *testing.T, s *Service, dir string) (string, []byte) {
	t.Helper()
	s.Close()
	p := filepath.Join(dir, "fm.db")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.CheckFile(p); err != nil {
		t.Fatalf("undamaged file fails the check: %v", err)
	}
	return p, b
}

// leafPages returns the offsets of bbolt leaf pages (flag 0x02) past the
// two meta pages.
func leafPages(b []byte, ps int) []int {
	var out []int
	for off := 2 * ps; off+ps <= len(b); off += ps {
		if binary.LittleEndian.Uint16(b[off+8:]) == 0x02 && binary.LittleEndian.Uint16(b[off+10:]) > 0 {
			out = append(out, off)
		}
	}
	return out
}

// liveValue returns the offset in the database file at path of the value
// of key in bucket as the file's current state holds it (not an older
// copy in a freed page): in the bucket's leaf page, or, for an inline
// bucket, in its parent's, the root's, where a key is followed by its
// value.
func liveValue(t *testing.T, path string, bucket, key []byte) int {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps := db.Info().PageSize
	off := -1
	db.View(func(tx *bolt.Tx) error {
		pg := tx.Bucket(bucket).Root()
		if pg == 0 { // inline
			pg = tx.Cursor().Bucket().Root()
		}
		page := b[int(pg)*ps : int(pg+1)*ps]
		if binary.LittleEndian.Uint16(page[8:]) != 0x02 {
			t.Fatalf("page %d is not a leaf page", pg)
		}
		// The last occurrence: meta's checksum record, which names the
		// keys, comes first.
		off = int(pg)*ps + bytes.LastIndex(page, key) + len(key)
		if v := tx.Bucket(bucket).Get(key); !bytes.Equal(b[off:off+len(v)], v) {
			t.Fatalf("%s %s not found in page %d", bucket, key, pg)
		}
		return nil
	})
	return off
}

// TestDamagedStoresRefused applies each damage of issue 15 to a copy of a
// real database: the check and Open must fail with an error (no panic),
// and the file must stay byte-identical. A bit flipped in a value of the
// meta bucket is refused with the key named.
func TestDamagedStoresRefused(t *testing.T) {
	dir := t.TempDir()
	p, orig := damagedDB(t, dir)
	ps := os.Getpagesize()
	leaves := leafPages(orig, ps)
	if len(leaves) < 3 {
		t.Fatalf("only %d leaf pages", len(leaves))
	}
	// Audit records live in pages in use and in freed pages (older
	// copies); take the last occurrence whose damage the check sees, so
	// the damage lands in a page in use. There must be one.
	audit := -1
	pat := []byte(`"action":"mcast.join"`)
	for off := bytes.LastIndex(orig, pat); off > 0 && audit < 0; off = bytes.LastIndex(orig[:off], pat) {
		b := bytes.Clone(orig)
		for i := 0; i < 8; i++ {
			b[off+i] ^= 0x5a
		}
		q := filepath.Join(t.TempDir(), "probe.db")
		os.WriteFile(q, b, 0o600)
		if store.CheckFile(q) != nil {
			audit = off
		}
	}
	if audit < 0 {
		t.Fatal("no damaged audit record was detected")
	}
	flip := func(key []byte, at int, bit byte) func([]byte) []byte {
		off := liveValue(t, p, bMeta, key) + at
		return func(b []byte) []byte {
			b[off] ^= bit
			return b
		}
	}
	// What the message of a damage must say (others: only that it is one
	// line without a panic).
	wants := map[string]string{
		"a bit of meta next_job flipped (2^56 added)":  "meta next_job: checksum mismatch",
		"a bit of meta token_sha256 flipped":           "meta token_sha256: checksum mismatch",
		"a bit of meta schema flipped (3 to 2)":        "meta schema: checksum mismatch",
		"a bit of meta created flipped (still a time)": "meta created: checksum mismatch",
	}
	damages := map[string]func([]byte) []byte{
		"a bit of meta next_job flipped (2^56 added)":  flip(kNextJob, 0, 0x01),
		"a bit of meta token_sha256 flipped":           flip(kToken, 0, 0x01),
		"a bit of meta schema flipped (3 to 2)":        flip(kVersion, 7, 0x01),
		"a bit of meta created flipped (still a time)": flip(kCreated, 3, 0x01), // the year's last digit
		"16 bytes flipped in the middle": func(b []byte) []byte {
			mid := (len(b) / 2 / ps) * ps
			for i := 0; i < 16; i++ {
				b[mid+i] ^= 0xff
			}
			return b
		},
		"truncated": func(b []byte) []byte { return b[:len(b)/2+123] },
		"bad element header": func(b []byte) []byte {
			off := leaves[len(leaves)/2] + 16
			binary.LittleEndian.PutUint32(b[off+4:], 0x7ffffff0) // pos
			binary.LittleEndian.PutUint32(b[off+12:], 0x7ffffff0)
			return b
		},
		"8 bytes flipped in an audit record": func(b []byte) []byte {
			for i := 0; i < 8; i++ {
				b[audit+i] ^= 0x5a
			}
			return b
		},
		"meta pages zeroed": func(b []byte) []byte {
			clear(b[:2*ps])
			return b
		},
		"meta page 1 zeroed": func(b []byte) []byte {
			clear(b[ps : 2*ps])
			return b
		},
		"meta page 0 zeroed": func(b []byte) []byte {
			clear(b[:ps])
			return b
		},
		"a branch page damaged": func(b []byte) []byte {
			for off := 2 * ps; off+ps <= len(b); off += ps {
				if binary.LittleEndian.Uint16(b[off+8:]) == 0x01 { // branch
					for i := 16; i < 64; i++ {
						b[off+i] ^= 0xa5
					}
					return b
				}
			}
			return b
		},
		"freelist page id out of range": func(b []byte) []byte {
			for m := 0; m < 2; m++ {
				meta := b[m*ps+16:]
				binary.LittleEndian.PutUint64(meta[32:], 1<<40) // freelist pgid
				h := fnv.New64a()
				h.Write(meta[:56])
				binary.LittleEndian.PutUint64(meta[56:], h.Sum64())
			}
			return b
		},
	}
	for name, damage := range damages {
		t.Run(name, func(t *testing.T) {
			q := filepath.Join(t.TempDir(), "fm.db")
			bad := damage(bytes.Clone(orig))
			if err := os.WriteFile(q, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(TokenFile(q), []byte("x\n"), 0o600)
			sum := sha256.Sum256(bad)
			if err := store.CheckFile(q); err == nil {
				t.Error("check passed")
			} else {
				t.Log(err)
				for _, bad := range []string{"panic", "index out of range", "assertion", "\n"} {
					if strings.Contains(err.Error(), bad) {
						t.Errorf("message %q contains %q", err, bad)
					}
				}
				if !strings.Contains(err.Error(), wants[name]) {
					t.Errorf("check: %v, want %q", err, wants[name])
				}
			}
			if s, _, err := Open(Config{DBPath: q, NewRouting: AngaraRouting("angara*")}); err == nil {
				s.Close()
				t.Error("damaged database opened")
			} else if !strings.Contains(err.Error(), wants[name]) || strings.Contains(err.Error(), "\n") {
				t.Errorf("open: %v, want one line with %q", err, wants[name])
			}
			after, _ := os.ReadFile(q)
			if sha256.Sum256(after) != sum {
				t.Error("the damaged file was modified")
			}
		})
	}
	_ = p
}
