package fm

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"
)

// FuzzCheckFile: damaged database files are refused without a panic or a
// fault, and never modified.
func FuzzCheckFile(f *testing.F) {
	dir := f.TempDir()
	s, _, err := Open(Config{DBPath: filepath.Join(dir, "seed.db"), Topo: "torus:4x4", NewRouting: AngaraRouting("angara*")})
	if err != nil {
		f.Fatal(err)
	}
	s.Submit("f", client.JobRequest{Nodes: 2})
	s.Close()
	seed, _ := os.ReadFile(filepath.Join(dir, "seed.db"))
	f.Add(uint32(0), uint64(0), uint8(0))
	f.Add(uint32(len(seed)/2), uint64(0xdeadbeef), uint8(8))
	f.Add(uint32(4096+16), uint64(1<<40), uint8(8))
	f.Add(uint32(3*4096), uint64(0), uint8(0xff))
	f.Fuzz(func(t *testing.T, off uint32, val uint64, n uint8) {
		b := bytes.Clone(seed)
		if n == 0xff {
			b = b[:int(off)%len(b)]
		} else {
			for i := 0; i < int(n%9); i++ {
				if p := (int(off) + i) % len(b); p >= 0 {
					b[p] ^= byte(val >> (8 * i))
				}
			}
		}
		p := filepath.Join(t.TempDir(), "fm.db")
		os.WriteFile(p, b, 0o600)
		store.CheckFile(p)
		if after, _ := os.ReadFile(p); !bytes.Equal(after, b) {
			t.Fatal("the file was modified")
		}
	})
}
