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
)

// damagedDB builds a database with jobs, groups and enough audit entries
// to fill several pages, closes it and returns its bytes.
func damagedDB(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	s, _ := openTest(t, dir, "torus:4x4x4", nil)
	for i := 0; i < 6; i++ {
		if _, err := s.Submit("test", JobRequest{Nodes: 2}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 300; i++ {
		if _, err := s.mc.join(context.Background(), "test", McastRequest{Group: fmt.Sprintf("g%03d", i), Member: "0.0.0", MemberCount: 3}); err != nil {
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
	if err := CheckFile(p); err != nil {
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

// TestDamagedStoresRefused applies each damage of issue 15 to a copy of a
// real database: the check and Open must fail with an error (no panic),
// and the file must stay byte-identical.
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
		if CheckFile(q) != nil {
			audit = off
		}
	}
	if audit < 0 {
		t.Fatal("no damaged audit record was detected")
	}
	damages := map[string]func([]byte) []byte{
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
			if err := CheckFile(q); err == nil {
				t.Error("check passed")
			} else {
				t.Log(err)
				for _, bad := range []string{"panic", "index out of range", "assertion", "\n"} {
					if strings.Contains(err.Error(), bad) {
						t.Errorf("message %q contains %q", err, bad)
					}
				}
			}
			if s, _, err := Open(Config{DBPath: q, NewRouting: AngaraRouting("angara*")}); err == nil {
				s.Close()
				t.Error("damaged database opened")
			}
			after, _ := os.ReadFile(q)
			if sha256.Sum256(after) != sum {
				t.Error("the damaged file was modified")
			}
		})
	}
	_ = p
}
