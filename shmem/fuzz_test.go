package shmem

import (
	"bufio"
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		ok   bool
	}{
		{"8", 8, true}, {"64K", 64 << 10, true}, {"1MiB", 1 << 20, true}, {" 2g ", 2 << 30, true},
		{"10b", 10, true}, {"", 0, false}, {"-1", 0, false}, {"1.5K", 0, false}, {"2000G", 0, false}, {"K", 0, false},
	} {
		got, err := ParseSize(c.in)
		if (err == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("ParseSize(%q) = %d, %v", c.in, got, err)
		}
	}
	if _, err := ParseSizes("8,0"); err == nil {
		t.Error("zero size accepted")
	}
	if v, err := ParseSizes("8, 1K,"); err != nil || len(v) != 2 || v[1] != 1024 {
		t.Errorf("ParseSizes: %v %v", v, err)
	}
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"8", "64K", "1MiB", "", "-3", "99999999999999999999G"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseSize(s)
		if err == nil && (v < 0 || v > 1<<40) {
			t.Fatalf("ParseSize(%q) = %d", s, v)
		}
	})
}

func FuzzConfigFromEnv(f *testing.F) {
	f.Add("0", "2", "shm", "/tmp/x", "", "00000000000000ff", "1048576", "3s")
	f.Add("1", "2", "tcp", "", "127.0.0.1:9", "0123456789abcdef", "", "")
	f.Add("5", "2", "udp", "", "", "zz", "-1", "-3s")
	f.Fuzz(func(t *testing.T, rank, npes, tr, dir, rdv, job, heap, timeout string) {
		env := map[string]string{EnvRank: rank, EnvNPEs: npes, EnvTransport: tr, EnvDir: dir,
			EnvRendezvous: rdv, EnvJob: job, EnvHeap: heap, EnvTimeout: timeout}
		c, ok, err := ConfigFromEnv(func(k string) string { return env[k] })
		if !ok || err != nil {
			return
		}
		if c.Rank < 0 || c.Rank >= c.NPEs || c.Heap < 0 || c.Timeout <= 0 {
			t.Fatalf("accepted bad config %+v", c)
		}
		// round trip through Env
		back := map[string]string{}
		for _, kv := range c.Env() {
			k, v, _ := strings.Cut(kv, "=")
			back[k] = v
		}
		c2, ok2, err2 := ConfigFromEnv(func(k string) string { return back[k] })
		if !ok2 || err2 != nil || c2.Rank != c.Rank || c2.NPEs != c.NPEs || c2.Job != c.Job || c2.Transport != c.Transport {
			t.Fatalf("round trip: %+v -> %+v (%v)", c, c2, err2)
		}
	})
}

// FuzzServeOps feeds arbitrary bytes to the TCP server loop: it must never
// panic or touch memory outside the region (the region is surrounded by
// guard bytes that must stay intact).
func FuzzServeOps(f *testing.F) {
	var seed bytes.Buffer
	seed.Write([]byte{opPut})
	seed.Write(le.AppendUint32(le.AppendUint64(nil, 8), 4))
	seed.Write([]byte{1, 2, 3, 4})
	seed.Write([]byte{opPutW})
	seed.Write(le.AppendUint64(le.AppendUint64(nil, 16), 99))
	seed.Write([]byte{opAmo, 1, 0, 0, 0, byte(OpAdd)})
	seed.Write(le.AppendUint64(le.AppendUint64(le.AppendUint64(nil, 24), 5), 0))
	seed.Write([]byte{opGet, 2, 0, 0, 0})
	seed.Write(le.AppendUint32(le.AppendUint64(nil, 0), 32))
	seed.Write([]byte{opFlush, 3, 0, 0, 0, opPing})
	f.Add(seed.Bytes())
	f.Add([]byte{opPut, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 9})
	f.Add([]byte{opFail, 1, 0, 0, 0, 3, 0, 'a', 'b', 'c', opBye})
	f.Add([]byte{0x42})
	f.Fuzz(func(t *testing.T, in []byte) {
		const guard = 64
		mem := make([]byte, guard+256+guard)
		for i := range mem {
			mem[i] = 0xA5
		}
		region := mem[guard : guard+256 : guard+256]
		var out bytes.Buffer
		err := serveOps(bufio.NewReader(bytes.NewReader(in)), region, bufio.NewWriter(&out), func(int, string) {})
		if err == nil {
			t.Fatal("serveOps returned nil")
		}
		if err != io.EOF && err != io.ErrUnexpectedEOF && err != errBye {
			if _, ok := err.(*protoError); !ok {
				t.Fatalf("unexpected error %v", err)
			}
		}
		for i := 0; i < guard; i++ {
			if mem[i] != 0xA5 || mem[len(mem)-1-i] != 0xA5 {
				t.Fatal("write outside the region")
			}
		}
	})
}
