package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/internal/etcdtest"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestParseEtcdURL(t *testing.T) {
	for _, c := range []struct {
		in, want, err string
	}{
		{in: "etcd://127.0.0.1:2379/icn", want: "etcd://127.0.0.1:2379/icn"},
		{in: "etcd://a:1,b:2,[::1]:3/icn/site-1/", want: "etcd://a:1,b:2,[::1]:3/icn/site-1"},
		{in: "etcd://a:1/p?max-txn-ops=1024&max-request-bytes=10485760", want: "etcd://a:1/p"},
		{in: "http://a:1/p", err: "want etcd://"},
		{in: "etcd://a:1", err: "no key prefix"},
		{in: "etcd://a:1/", err: "no key prefix"},
		{in: "etcd:///p", err: "no etcd endpoint"},
		{in: "etcd://a/p", err: "not HOST:PORT"},
		{in: "etcd://a:0/p", err: "not 1..65535"},
		{in: "etcd://a:99999/p", err: "not 1..65535"},
		{in: "etcd://a:1,/p", err: "not HOST:PORT"},
		{in: "etcd://a:1/p q", err: "letters, digits"},
		{in: "etcd://a:1/p//q", err: "empty component"},
		{in: "etcd://a:1/p?max-txn-ops=0", err: "not a positive number"},
		{in: "etcd://a:1/p?lease=3", err: "unknown option"},
	} {
		cfg, err := ParseEtcdURL(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want one containing %q", c.in, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.in, err)
		case c.err == "" && cfg.URL() != c.want:
			t.Errorf("%q: %s, want %s", c.in, cfg.URL(), c.want)
		}
	}
	cfg, _ := ParseEtcdURL("etcd://a:1/p?max-txn-ops=1024&max-request-bytes=10485760")
	if cfg.MaxTxnOps != 1024 || cfg.MaxRequestBytes != 10485760 {
		t.Errorf("limits %d %d", cfg.MaxTxnOps, cfg.MaxRequestBytes)
	}
}

func FuzzParseEtcdURL(f *testing.F) {
	for _, s := range []string{"etcd://127.0.0.1:2379/icn", "etcd://a:1,b:2/p?max-txn-ops=5", "etcd://[::1]:3/x/y", "etcd://:/", "etcd://a:1/p?%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := ParseEtcdURL(s)
		if err != nil {
			return
		}
		// What parses comes back the same way.
		again, err := ParseEtcdURL(cfg.URL())
		if err != nil || again.URL() != cfg.URL() {
			t.Fatalf("%q → %q → %v", s, cfg.URL(), err)
		}
	})
}

// openTestEtcd connects a backend to the cluster under prefix.
func openTestEtcd(t *testing.T, c *etcdtest.Cluster, prefix string) *Etcd {
	t.Helper()
	cfg, err := ParseEtcdURL(c.URL(prefix))
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenEtcd(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// lead makes s the leader of its prefix.
func lead(t *testing.T, s *Etcd, ttl time.Duration) *Leadership {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := s.Campaign(ctx, []byte("test"), ttl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lead(ctx, l); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestEtcdKV checks the backend's transactions against a map: puts,
// deletes, reads of one's own writes, ordered walks with a start key,
// sequences, and values large enough to be kept in chunks (read back
// whole, their chunk sets deleted once nothing refers to them).
func TestEtcdKV(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := openTestEtcd(t, c, "kv")
	ctx := context.Background()
	if created, err := s.create(ctx, func(tx kvTx) error { return tx.Put([]byte("meta"), []byte("magic"), []byte("m")) }); err != nil || !created {
		t.Fatalf("create: %v %v", created, err)
	}
	if created, err := s.create(ctx, func(tx kvTx) error { return tx.Put([]byte("meta"), []byte("magic"), []byte("x")) }); err != nil || created {
		t.Fatalf("second create succeeded (%v, %v)", created, err)
	}
	if _, err := s.update(ctx, func(tx kvTx) error { return tx.Put([]byte("jobs"), u64(1), []byte("a")) }); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("write without leadership: %v", err)
	}
	lead(t, s, 5*time.Second)
	r := rand.New(rand.NewPCG(1, 2))
	model := map[string]map[string][]byte{}
	buckets := []string{"jobs", "tables", "groups"}
	keyOf := func(b string, i int) []byte {
		if b == "groups" {
			return []byte(fmt.Sprintf("g/%d", i))
		}
		return u64(uint64(i))
	}
	for round := 0; round < 12; round++ {
		_, err := s.update(ctx, func(tx kvTx) error {
			for op := 0; op < 6; op++ {
				b := buckets[r.IntN(len(buckets))]
				k := keyOf(b, r.IntN(8))
				if model[b] == nil {
					model[b] = map[string][]byte{}
				}
				if r.IntN(4) == 0 {
					if err := tx.Delete([]byte(b), k); err != nil {
						return err
					}
					delete(model[b], string(k))
				} else {
					n := 1 + r.IntN(100)
					if b == "tables" && r.IntN(3) == 0 {
						n = inlineMax + 1 + r.IntN(3*chunkSize)
					}
					v := make([]byte, n)
					for i := range v {
						v[i] = byte(r.Uint32())
					}
					if err := tx.Put([]byte(b), k, v); err != nil {
						return err
					}
					model[b][string(k)] = v
				}
				// Reads see the transaction's own writes.
				got, err := tx.Get([]byte(b), k)
				if err != nil {
					return err
				}
				if want := model[b][string(k)]; !bytes.Equal(got, want) {
					return fmt.Errorf("read of own write: %d bytes, want %d", len(got), len(want))
				}
			}
			_, err := tx.NextSequence([]byte("audit"))
			return err
		})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		// A read transaction sees the model, walks in key order, and
		// a walk from a key starts there.
		_, err = s.view(ctx, func(tx kvTx) error {
			for _, b := range buckets {
				var keys []string
				if err := tx.ForEach([]byte(b), nil, func(k, v []byte) error {
					if want, ok := model[b][string(k)]; !ok || !bytes.Equal(v, want) {
						return fmt.Errorf("bucket %s key %x: %d bytes, want %d (present %v)", b, k, len(v), len(want), ok)
					}
					keys = append(keys, string(k))
					return nil
				}); err != nil {
					return err
				}
				if len(keys) != len(model[b]) {
					return fmt.Errorf("bucket %s: %d keys, want %d", b, len(keys), len(model[b]))
				}
				for i := 1; i < len(keys); i++ {
					if keys[i-1] >= keys[i] {
						return fmt.Errorf("bucket %s: keys out of order", b)
					}
				}
				if len(keys) > 1 {
					n := 0
					tx.ForEach([]byte(b), []byte(keys[1]), func(k, v []byte) error { n++; return nil })
					if n != len(keys)-1 {
						return fmt.Errorf("bucket %s: walk from the second key saw %d keys, want %d", b, n, len(keys)-1)
					}
				}
			}
			if seq, err := tx.Sequence([]byte("audit")); err != nil || seq != uint64(round+1) {
				return fmt.Errorf("sequence %d (%v), want %d", seq, err, round+1)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	// Every chunk set left belongs to a key that holds a large value.
	sets := chunkSets(t, s)
	large := 0
	for _, v := range model["tables"] {
		if len(v) > inlineMax {
			large++
		}
	}
	if sets != large {
		t.Errorf("%d chunk sets stored, %d large values", sets, large)
	}
}

func chunkSets(t *testing.T, s *Etcd) int {
	t.Helper()
	resp, err := s.cli.Get(context.Background(), s.pre+"chunks/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	sets := map[string]bool{}
	for _, kv := range resp.Kvs {
		set, _, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), s.pre+"chunks/"), "/")
		sets[set] = true
	}
	return len(sets)
}

// TestEtcdSweep checks that chunk sets no key refers to (a leader that
// died between its chunks and its commit) are deleted by the next
// leader's sweep, and that referenced ones stay.
func TestEtcdSweep(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := openTestEtcd(t, c, "sweep")
	ctx := context.Background()
	lead(t, s, 5*time.Second)
	big := bytes.Repeat([]byte{7}, inlineMax+10)
	if _, err := s.update(ctx, func(tx kvTx) error { return tx.Put([]byte("tables"), u64(1), big) }); err != nil {
		t.Fatal(err)
	}
	// An orphan, as a commit that never happened leaves.
	if _, err := s.cli.Put(ctx, s.chunkPrefix("dead-1")+"000000", "x"); err != nil {
		t.Fatal(err)
	}
	if n := chunkSets(t, s); n != 2 {
		t.Fatalf("%d chunk sets before the sweep, want 2", n)
	}
	if n, err := s.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep deleted %d (%v), want 1", n, err)
	}
	if n := chunkSets(t, s); n != 1 {
		t.Fatalf("%d chunk sets after the sweep, want 1", n)
	}
	var got []byte
	s.view(ctx, func(tx kvTx) error { var err error; got, err = tx.Get([]byte("tables"), u64(1)); return err })
	if !bytes.Equal(got, big) {
		t.Fatalf("large value after the sweep: %d bytes", len(got))
	}
	// Altered chunks are refused with their set named.
	resp, _ := s.cli.Get(ctx, s.pre+"chunks/", clientv3.WithPrefix())
	k := string(resp.Kvs[0].Key)
	v := []byte(string(resp.Kvs[0].Value))
	v[100] ^= 1
	s.cli.Put(ctx, k, string(v))
	_, err := s.view(ctx, func(tx kvTx) error { _, err := tx.Get([]byte("tables"), u64(1)); return err })
	if err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("altered chunk read back: %v", err)
	}
}

// TestEtcdFencing checks that only the leader writes: a second
// instance waits in its campaign while the first leads, takes over when
// the first's lease runs out, and from then on every write of the first
// fails with ErrNotLeader and changes nothing — also when the first
// still believes it leads (its key deleted behind its back).
func TestEtcdFencing(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a := openTestEtcd(t, c, "fence")
	b := openTestEtcd(t, c, "fence")
	ctx := context.Background()
	la := lead(t, a, 2*time.Second)
	write := func(s *Etcd, v string) error {
		_, err := s.update(ctx, func(tx kvTx) error { return tx.Put([]byte("groups"), []byte("g"), []byte(v)) })
		return err
	}
	if err := write(a, "a1"); err != nil {
		t.Fatal(err)
	}
	won := make(chan *Leadership, 1)
	go func() {
		l, err := b.Campaign(ctx, []byte("b"), 2*time.Second)
		if err != nil {
			t.Error(err)
		}
		won <- l
	}()
	select {
	case <-won:
		t.Fatal("b was elected while a leads")
	case <-time.After(3 * time.Second):
	}
	// a's key goes behind its back (as when its lease expires while
	// it is frozen): a still believes it leads for a moment.
	if _, err := a.cli.Delete(ctx, la.Key); err != nil {
		t.Fatal(err)
	}
	lb := <-won
	if _, err := b.Lead(ctx, lb); err != nil {
		t.Fatal(err)
	}
	if err := write(a, "a2"); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("write of the deposed leader: %v", err)
	}
	if err := write(b, "b1"); err != nil {
		t.Fatal(err)
	}
	if err := write(a, "a3"); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("second write of the deposed leader: %v", err)
	}
	// A key required absent refuses the transaction without costing
	// the leadership.
	absent := func(v string) error {
		_, err := b.update(ctx, func(tx kvTx) error {
			if err := tx.Absent([]byte("requests"), []byte("r")); err != nil {
				return err
			}
			return tx.Put([]byte("requests"), []byte("r"), []byte(v))
		})
		return err
	}
	if err := absent("first"); err != nil {
		t.Fatal(err)
	}
	if err := absent("second"); !errors.Is(err, ErrExists) {
		t.Fatalf("a second write of a key required absent: %v", err)
	}
	if err := write(b, "b1"); err != nil {
		t.Fatalf("write after a refused one: %v", err)
	}
	var got []byte
	b.view(ctx, func(tx kvTx) error { var err error; got, err = tx.Get([]byte("groups"), []byte("g")); return err })
	if string(got) != "b1" {
		t.Fatalf("value %q, want b1", got)
	}
	if v, term, ok, err := a.Leader(ctx); err != nil || !ok || string(v) != "b" || term != lb.Term() {
		t.Fatalf("leader %q term %d (%v %v), want b term %d", v, term, ok, err, lb.Term())
	}
}

// TestEtcdLeaseExpiry checks that a leader whose keep-alives stop (its
// client gone, as a killed process) is replaced within the lease plus
// etcd's expiry check, and that Valid turns false on a leadership whose
// lease ended.
func TestEtcdLeaseExpiry(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a := openTestEtcd(t, c, "expiry")
	b := openTestEtcd(t, c, "expiry")
	ctx := context.Background()
	la := lead(t, a, 2*time.Second)
	if !la.Valid() {
		t.Fatal("fresh leadership not valid")
	}
	a.cli.Close() // no resign: the lease must run out
	lb, err := b.Campaign(ctx, []byte("b"), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if lb.Term() <= la.Term() {
		t.Fatalf("term %d after %d", lb.Term(), la.Term())
	}
	select {
	case <-la.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the lost lease was not noticed")
	}
	if la.Valid() {
		t.Fatal("leadership valid after its lease was lost")
	}
}

// TestEtcdFollow checks that Follow delivers every committed change in
// revision order, one call per commit, with chunked values whole.
func TestEtcdFollow(t *testing.T) {
	c := etcdtest.Start(t, 1)
	s := openTestEtcd(t, c, "follow")
	f := openTestEtcd(t, c, "follow")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lead(t, s, 5*time.Second)
	start, _ := f.Revision(ctx)
	type commit struct {
		rev int64
		evs []Event
	}
	got := make(chan commit, 100)
	go func() {
		err := f.Follow(ctx, start, func(rev int64, evs []Event) error {
			if len(evs) > 0 {
				got <- commit{rev, evs}
			}
			return nil
		})
		if ctx.Err() == nil {
			t.Errorf("follow: %v", err)
		}
	}()
	// More chunks than one read asks for.
	big := bytes.Repeat([]byte("0123456789"), (chunksPerRead+2)*chunkSize/10)
	var revs []int64
	for i := 0; i < 5; i++ {
		rev, err := s.update(ctx, func(tx kvTx) error {
			if err := tx.Put([]byte("jobs"), u64(uint64(i)), []byte{byte(i)}); err != nil {
				return err
			}
			if i == 2 {
				return tx.Put([]byte("tables"), u64(2), big)
			}
			if i == 3 {
				return tx.Delete([]byte("jobs"), u64(1))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		revs = append(revs, rev)
	}
	for i, rev := range revs {
		select {
		case cm := <-got:
			if cm.rev != rev {
				t.Fatalf("commit %d seen at revision %d, want %d", i, cm.rev, rev)
			}
			want := map[int]int{2: 2, 3: 2}[i]
			if want == 0 {
				want = 1
			}
			if len(cm.evs) != want {
				t.Fatalf("commit %d: %d events, want %d", i, len(cm.evs), want)
			}
			for _, e := range cm.evs {
				switch {
				case e.Bucket == "tables" && !bytes.Equal(e.Value, big):
					t.Fatalf("chunked value seen as %d bytes", len(e.Value))
				case i == 3 && e.Bucket == "jobs" && bytes.Equal(e.Key, u64(1)) && e.Value != nil:
					t.Fatal("deletion seen with a value")
				}
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("commit %d not seen", i)
		}
	}
}
