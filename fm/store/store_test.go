package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/internal/etcdtest"
	"github.com/icn-hpc/icn/routing"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// testTable is a table of m active nodes on a 64-wide ring of rings
// (routes along X then Y), big enough for m ≥ 256 to be kept in chunks
// on etcd: its first two routes are swapped, so that it is stored in the
// stored form's version 1 (routing.EncodeStoredRoutes), 5 bytes a route
// and more, not version 2, a fraction of a byte.
func testTable(m int) *routing.TableJSON {
	tf := &routing.TableJSON{Dims: []int{64, 64}, Rules: "dirbit"}
	for i := 0; i < m; i++ {
		tf.Active = append(tf.Active, []int{i % 64, i / 64})
	}
	for a := 0; a < m; a++ {
		for b := 0; b < m; b++ {
			if a == b {
				continue
			}
			src, dst := tf.Active[a], tf.Active[b]
			var dirs []string
			for x := src[0]; x != dst[0]; x = (x + 1) % 64 {
				dirs = append(dirs, "+X")
			}
			for y := src[1]; y != dst[1]; y = (y + 1) % 64 {
				dirs = append(dirs, "+Y")
			}
			tf.Routes = append(tf.Routes, routing.RouteJSON{Src: src, Dst: dst, Dirs: dirs})
		}
	}
	if len(tf.Routes) > 1 {
		tf.Routes[0], tf.Routes[1] = tf.Routes[1], tf.Routes[0]
	}
	return tf
}

// fill writes the same history to any store: a fabric, three jobs (one
// with a table kept in chunks on etcd), a release, groups, a request
// answer and audit entries.
func fill(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	big := testTable(300)
	if len(mustEncode(t, big)) <= inlineMax {
		t.Fatal("the big table is not big")
	}
	steps := []func(*Tx) error{
		func(tx *Tx) error {
			if err := tx.SetTokenHash(bytes.Repeat([]byte{3}, 32)); err != nil {
				return err
			}
			return tx.PutFabric(FabricRecord{Spec: "torus:64x64", FailedLinks: []string{"0.0+X"}, Updated: time.Unix(1, 0).UTC()})
		},
		func(tx *Tx) error {
			for i, tf := range []*routing.TableJSON{testTable(4), big, testTable(9)} {
				id, err := tx.NextJobID()
				if err != nil {
					return err
				}
				j := &client.JobRecord{ID: id, Name: fmt.Sprint("j", i), State: client.JobRunning, Nodes: len(tf.Active), Table: tf,
					Created: time.Unix(2, 0).UTC()}
				if err := tx.PutJob(j, nil); err != nil {
					return err
				}
				if err := tx.Log("job.submit", fmt.Sprint("job ", id), map[string]int{"nodes": j.Nodes}); err != nil {
					return err
				}
			}
			return tx.PutRequest("req-1", Outcome{Action: "job.submit", Body: []byte(`{"id":1}`), Time: time.Unix(3, 0).UTC()})
		},
		func(tx *Tx) error {
			j, err := tx.Job(3)
			if err != nil {
				return err
			}
			j.State, j.Table = client.JobReleased, nil
			if err := tx.PutJob(j, nil); err != nil {
				return err
			}
			for _, g := range []string{"g1", "a/b"} {
				if err := tx.PutGroup(&client.GroupRecord{ID: g, State: "Routed", MemberCount: 2, Members: []string{"0.0", "1.0"}}); err != nil {
					return err
				}
			}
			return tx.Log("job.release", "job 3", nil)
		},
		func(tx *Tx) error {
			if err := tx.DeleteGroup("g1"); err != nil {
				return err
			}
			return tx.SetTokenShown(true)
		},
	}
	for i, step := range steps {
		if _, err := s.Update(ctx, "test", step); err != nil {
			t.Fatalf("%s: step %d: %v", s.Kind(), i, err)
		}
	}
}

func mustEncode(t *testing.T, tf *routing.TableJSON) []byte {
	t.Helper()
	b, err := routing.EncodeStoredRoutes(tf)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dump lists every record of a store (meta included) and the audit
// sequence, for comparisons between stores.
func dump(t *testing.T, s *Store, sameTerm bool) string {
	t.Helper()
	var out strings.Builder
	_, err := s.View(context.Background(), func(tx *Tx) error {
		for _, b := range append(storeBuckets(schemaVersion), bMeta) {
			if err := tx.kv.ForEach(b, nil, func(k, v []byte) error {
				if bytes.Equal(b, bMeta) && (bytes.Equal(k, kCreated) || bytes.Equal(k, kMetaSum)) {
					// The creation time differs between stores made
					// in different seconds, and so does the meta
					// checksum that covers it (each store's Check
					// verifies its own).
					return nil
				}
				if bytes.Equal(b, bAudit) && !sameTerm {
					// The leadership term differs between backends.
					data, err := unframeRecord(v, false)
					if err != nil {
						return err
					}
					var e client.Event
					if err := json.Unmarshal(data, &e); err != nil {
						return err
					}
					e.Term = 0
					data, _ = json.Marshal(e)
					v = frameRecord(data)
				}
				fmt.Fprintf(&out, "%s/%x=%x\n", b, k, v)
				return nil
			}); err != nil {
				return err
			}
		}
		n, err := tx.kv.Sequence(bAudit)
		fmt.Fprintf(&out, "audit seq %d\n", n)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func newBolt(t *testing.T) *Store {
	t.Helper()
	s, created, err := OpenBolt(filepath.Join(t.TempDir(), "fm.db"))
	if err != nil || !created {
		t.Fatalf("bolt: %v (created %v)", err, created)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newEtcdStore(t *testing.T, c *etcdtest.Cluster, prefix string, init bool) *Store {
	t.Helper()
	cfg, err := ParseEtcdURL(c.URL(prefix))
	if err != nil {
		t.Fatal(err)
	}
	s, empty, err := OpenEtcdStore(context.Background(), cfg)
	if err != nil || !empty {
		t.Fatalf("etcd: %v (empty %v)", err, empty)
	}
	t.Cleanup(func() { s.Close() })
	if init {
		if created, err := s.Init(context.Background(), func(*Tx) error { return nil }); err != nil || !created {
			t.Fatalf("init: %v %v", created, err)
		}
		lead(t, s.etcd, 10*time.Second)
	}
	return s
}

// TestStoresAgree writes the same history to a bbolt file and an etcd
// prefix: both hold the same bytes, read back the same records, and
// pass the same check; copies from one to the other and back are equal
// to both.
func TestStoresAgree(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	b := newBolt(t)
	e := newEtcdStore(t, c, "agree", true)
	clock := func() time.Time { return time.Unix(100, 0) }
	b.Now, e.Now = clock, clock
	fill(t, b)
	fill(t, e)
	db, de := dump(t, b, false), dump(t, e, false)
	if db != de {
		t.Fatalf("the stores differ: %s", firstDiff(db, de))
	}
	for _, s := range []*Store{b, e} {
		if err := s.Check(ctx); err != nil {
			t.Fatalf("%s: %v", s.Kind(), err)
		}
		_, err := s.View(ctx, func(tx *Tx) error {
			j, err := tx.Job(2)
			if err != nil || j == nil || len(j.Table.Routes) != 300*299 {
				return fmt.Errorf("job 2: %v", err)
			}
			if j, err := tx.Job(3); err != nil || j.Table != nil || j.State != client.JobReleased {
				return fmt.Errorf("job 3: %+v %v", j, err)
			}
			ev, err := tx.Events(1, 10)
			if err != nil || len(ev) != 3 || ev[0].Seq != 2 || ev[2].Action != "job.release" {
				return fmt.Errorf("events %+v %v", ev, err)
			}
			o, err := tx.Request("req-1")
			if err != nil || o == nil || o.Action != "job.submit" {
				return fmt.Errorf("request: %+v %v", o, err)
			}
			var groups []string
			tx.Groups(func(g *client.GroupRecord) error { groups = append(groups, g.ID); return nil })
			if len(groups) != 1 || groups[0] != "a/b" {
				return fmt.Errorf("groups %v", groups)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", s.Kind(), err)
		}
	}
	// bolt → etcd → bolt.
	e2 := newEtcdStore(t, c, "copy", false)
	if _, err := Copy(ctx, b, e2); err != nil {
		t.Fatal(err)
	}
	b2 := newBolt(t)
	if _, err := Copy(ctx, e2, b2); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Store{e2, b2} {
		if d := dump(t, s, false); d != db {
			t.Fatalf("copy on %s differs: %s", s.Kind(), firstDiff(db, d))
		}
		if err := s.Check(ctx); err != nil {
			t.Fatalf("copy on %s: %v", s.Kind(), err)
		}
	}
	// A copy goes only into an empty store.
	if _, empty, err := OpenEtcdStore(ctx, e2.etcd.cfg); err != nil || empty {
		t.Fatalf("the copy's prefix is empty (%v)", err)
	}
}

// TestEtcdDamageRefused alters records of an etcd store behind its back
// and checks that the check names each, as it does on a bbolt file.
func TestEtcdDamageRefused(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	for _, d := range []struct {
		name, key, want string
		alter           func(v []byte) []byte
	}{
		{"next job id", "meta/next_job", "meta next_job: checksum mismatch", func(v []byte) []byte { v[7] ^= 0x80; return v }},
		{"token hash", "meta/token_sha256", "meta token_sha256: checksum mismatch", func(v []byte) []byte { v[0] ^= 1; return v }},
		{"schema", "meta/schema", "meta schema: checksum mismatch", func(v []byte) []byte { v[7] = 2; return v }},
		{"job record", "jobs/0000000000000001", "job 1: checksum mismatch", func(v []byte) []byte { v[20] ^= 1; return v }},
		{"audit entry", "audit/0000000000000002", "audit entry 2: checksum mismatch", func(v []byte) []byte { v[len(v)-3] ^= 1; return v }},
		{"fabric", "fabric/current", "fabric record: checksum mismatch", func(v []byte) []byte { v[10] ^= 1; return v }},
		{"chunk reference", "tables/0000000000000002", "damaged chunk reference", func(v []byte) []byte { return v[:len(v)-2] }},
		{"small table", "tables/0000000000000001", "job 1: routes: checksum mismatch", func(v []byte) []byte { v[6] ^= 1; return v }},
		{"audit sequence", "ctl/seq/audit", "checksum mismatch", func(v []byte) []byte { v[12] ^= 1; return v }},
	} {
		t.Run(d.name, func(t *testing.T) {
			s := newEtcdStore(t, c, "damage-"+strings.ReplaceAll(d.name, " ", "-"), true)
			fill(t, s)
			if err := s.Check(ctx); err != nil {
				t.Fatal(err)
			}
			k := s.etcd.pre + d.key
			resp, err := s.etcd.cli.Get(ctx, k)
			if err != nil || len(resp.Kvs) != 1 {
				t.Fatalf("%s: %v", k, err)
			}
			if _, err := s.etcd.cli.Put(ctx, k, string(d.alter(bytes.Clone(resp.Kvs[0].Value)))); err != nil {
				t.Fatal(err)
			}
			err = s.Check(ctx)
			if err == nil || !strings.Contains(err.Error(), d.want) || !errors.Is(err, ErrDamaged) {
				t.Fatalf("check: %v, want an error containing %q", err, d.want)
			}
			if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "panic") {
				t.Fatalf("check: not one clean line: %q", err)
			}
		})
	}
}

var _ = clientv3.WithPrefix

// firstDiff shows the first line where two dumps differ.
func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n%.400s\n%.400s", i, la[i], lb[i])
		}
	}
	return fmt.Sprintf("%d lines against %d", len(la), len(lb))
}

// TestRoutesVersionBySchema: a store of schema 5 keeps a table's routes
// in version 2 of the stored form, one of schema 4 (an etcd store is not
// migrated, and an older icn may read it) in version 1; both read back
// the routes written.
func TestRoutesVersionBySchema(t *testing.T) {
	tf := testTable(12)
	tf.Routes[0], tf.Routes[1] = tf.Routes[1], tf.Routes[0] // the table's order
	for _, c := range []struct {
		schema uint64
		v2     bool
	}{{schemaVersion, true}, {routesV2Schema - 1, false}} {
		s := newBolt(t)
		s.schema = c.schema
		j := &client.JobRecord{ID: 1, Nodes: 12, Table: tf}
		if _, err := s.Update(context.Background(), "test", func(tx *Tx) error { return tx.PutJob(j, nil) }); err != nil {
			t.Fatal(err)
		}
		_, err := s.View(context.Background(), func(tx *Tx) error {
			raw, err := tx.storedRoutes(j)
			if err != nil {
				return err
			}
			if v2 := routing.StoredRoutesVersion(raw) == 2; v2 != c.v2 {
				t.Errorf("schema %d: routes in version 2 %v, want %v", c.schema, v2, c.v2)
			}
			got, err := tx.Job(1)
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(got.Table.Routes, tf.Routes) {
				t.Errorf("schema %d: other routes read back", c.schema)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestLoadsByDirection: link loads are written in version 2 with their
// counts by direction and read back the same; without them, in version
// 1, read back without them; counts by direction above the link's, a
// later version, or bytes left over are refused.
func TestLoadsByDirection(t *testing.T) {
	l := Loads{Links: []int32{3, 7, 40}, Routes: []int32{5, 1, 9}, AB: []int32{2, 1, 0}}
	b, err := encodeLoads(0xdeadbeef, l)
	if err != nil || b[0] != 2 {
		t.Fatalf("encoded %v: % x", err, b)
	}
	sum, got, err := decodeLoads(b)
	if err != nil || sum != 0xdeadbeef || !reflect.DeepEqual(got, l) {
		t.Fatalf("read back %v %x %+v", err, sum, got)
	}
	v1 := l
	v1.AB = nil
	b1, err := encodeLoads(1, v1)
	if err != nil || b1[0] != 1 || len(b1) >= len(b) {
		t.Fatalf("version 1: %v % x", err, b1)
	}
	if _, got, err := decodeLoads(b1); err != nil || got.AB != nil || !reflect.DeepEqual(got.Routes, l.Routes) {
		t.Fatalf("version 1 read back %v %+v", err, got)
	}
	if _, err := encodeLoads(1, Loads{Links: []int32{1}, Routes: []int32{2}, AB: []int32{3}}); err == nil {
		t.Error("3 of 2 routes one way encoded")
	}
	bad := slices.Clone(b)
	bad[len(bad)-3] = 6 // 6 of 5 routes one way over link 3
	if _, _, err := decodeLoads(bad); err == nil {
		t.Error("more routes one way than over the link read")
	}
	later := slices.Clone(b)
	later[0] = 3
	if _, _, err := decodeLoads(later); err == nil {
		t.Error("version 3 read")
	}
	if _, _, err := decodeLoads(append(slices.Clone(b), 0)); err == nil {
		t.Error("a byte left over read")
	}
}

// TestPatchedRoutesBySchema: routes in version 3 of the stored form (a
// repaired table) are kept so by a store of schema 6 and written in
// version 2 into one of schema 5 (which an icn of that schema reads);
// both read back the same routes. Link loads by direction are kept by
// schema 6 and written without them into schema 5.
func TestPatchedRoutesBySchema(t *testing.T) {
	tf := testTable(12)
	tf.Routes[0], tf.Routes[1] = tf.Routes[1], tf.Routes[0] // the table's order
	base, err := routing.EncodeStoredRoutes(tf)
	if err != nil || routing.StoredRoutesVersion(base) != 2 {
		t.Fatalf("%v, version %d", err, routing.StoredRoutesVersion(base))
	}
	dirs, err := routing.AppendNamedDirs(nil, tf.Routes[0].Dirs)
	if err != nil {
		t.Fatal(err)
	}
	// Version 3: the base, and route 0 replaced by its own steps.
	v3 := binary.AppendUvarint([]byte{0x80, 0, 3}, uint64(len(base)))
	v3 = binary.AppendUvarint(binary.AppendUvarint(append(v3, base...), 1), 0)
	v3 = routing.AppendRuns(v3, dirs)
	for _, c := range []struct {
		schema  uint64
		version int
		ab      bool
	}{{schemaVersion, 3, true}, {routesV3Schema - 1, 2, false}} {
		s := newBolt(t)
		s.schema = c.schema
		j := &client.JobRecord{ID: 1, Nodes: 12, Table: tf}
		loads := Loads{Links: []int32{1, 2}, Routes: []int32{3, 4}, AB: []int32{1, 4}}
		if _, err := s.Update(context.Background(), "test", func(tx *Tx) error {
			if err := tx.PutJob(j, v3); err != nil {
				return err
			}
			return tx.PutJobLoads(1, loads)
		}); err != nil {
			t.Fatal(err)
		}
		_, err := s.View(context.Background(), func(tx *Tx) error {
			raw, sum, err := tx.storedRoutesSum(j)
			if err != nil {
				return err
			}
			if v := routing.StoredRoutesVersion(raw); v != c.version {
				t.Errorf("schema %d: routes in version %d, want %d", c.schema, v, c.version)
			}
			got, err := tx.Job(1)
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(got.Table.Routes, tf.Routes) {
				t.Errorf("schema %d: other routes read back", c.schema)
			}
			l, _, tied, err := tx.jobLoads(u64(1), sum)
			if err != nil || !tied || (l.AB != nil) != c.ab {
				t.Errorf("schema %d: loads %+v tied %v %v, want by direction %v", c.schema, l, tied, err, c.ab)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
