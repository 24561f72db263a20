package routing

import (
	"context"
	"encoding/binary"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestStoredRoutesCodec: random routes of a 3D torus (runs longer than 16
// steps, empty routes, a route of 127 runs) decode to the table encoded;
// a route of 128 runs, a step not named as Dir.String names it and a node
// outside the active ones are refused; every cut or a bad direction code
// is reported as damage, never a panic.
func TestStoredRoutesCodec(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 8))
	tf := &TableJSON{Dims: []int{4, 3, 5}}
	for x := range 4 {
		for z := range 5 {
			tf.Active = append(tf.Active, []int{x, x % 3, z})
		}
	}
	steps := func(runs, most int) []string {
		out := []string{}
		for range runs {
			d := Dir(rng.IntN(6))
			for range 1 + rng.IntN(most) {
				out = append(out, d.String())
			}
		}
		return out
	}
	for i := range 300 {
		dirs := steps(rng.IntN(5), 40)
		if i == 7 {
			dirs = []string{}
		}
		tf.Routes = append(tf.Routes, RouteJSON{Src: tf.Active[rng.IntN(len(tf.Active))], Dst: tf.Active[rng.IntN(len(tf.Active))], Dirs: dirs})
	}
	long := make([]string, 127)
	for i := range long {
		long[i] = Dir(i % 2).String()
	}
	tf.Routes = append(tf.Routes, RouteJSON{Src: tf.Active[0], Dst: tf.Active[1], Dirs: long})
	b := mustEncode(t, tf)
	back := &TableJSON{Dims: tf.Dims, Active: tf.Active}
	if err := DecodeStoredRoutes(b, back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Routes, tf.Routes) {
		t.Fatal("the decoded routes differ from those encoded")
	}
	if err := CheckStoredRoutes(b, tf); err != nil {
		t.Fatal(err)
	}
	refused := func(what string, edit func(r *RouteJSON), want string) {
		t.Helper()
		c := *tf
		c.Routes = append([]RouteJSON(nil), tf.Routes...)
		edit(&c.Routes[len(c.Routes)-1])
		if _, err := EncodeStoredRoutes(&c); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", what, err, want)
		}
	}
	refused("128 runs", func(r *RouteJSON) { r.Dirs = append(r.Dirs, "+Z") }, "128 runs")
	refused("Unicode minus", func(r *RouteJSON) { r.Dirs = []string{"−X"} }, "step")
	refused("a node not active", func(r *RouteJSON) { r.Src = []int{3, 2, 4} }, "not the table's active nodes")
	for n := range len(b) {
		if err := CheckStoredRoutes(b[:n], tf); err == nil || !strings.Contains(err.Error(), "damaged") {
			t.Fatalf("cut to %d of %d bytes: %v", n, len(b), err)
		}
	}
	// The last route's first run byte, made a direction of a 7th dimension.
	bad := append([]byte(nil), b...)
	bad[len(bad)-127] = 0xc0
	if err := CheckStoredRoutes(bad, tf); err == nil || !strings.Contains(err.Error(), "direction code 12") {
		t.Errorf("direction 12: %v", err)
	}
}

func mustEncode(t *testing.T, tf *TableJSON) []byte {
	t.Helper()
	b, err := EncodeStoredRoutes(tf)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// storedV2Tables are tables of the kinds the fabric manager stores: a
// box, a set with holes and transit nodes (whose routes differ by
// position), a set around a failed link, and a torus with a mesh
// dimension.
func storedV2Tables(t testing.TB) map[string]*Table {
	return map[string]*Table{
		"box":         buildFor(t, "6x5x4", "", AngaraStar, "1-4.0-3.1-2", "", BFS),
		"holes":       buildFor(t, "6x5x4", "", AngaraStar, "0-3.0-2.0,0-3.0-1.1,0-2.2.1", "3.2.1", BFS),
		"failed":      buildFor(t, "4x3x3", "1.1.1+X", AngaraStar, "", "", BFS),
		"mesh":        buildFor(t, "4x3x2:mesh=Z", "", AngaraStar, "", "", BFS),
		"two nodes":   buildFor(t, "3x2", "", AngaraStar, "0.0,1.0", "", BFS),
		"angara ring": buildFor(t, "7x3", "", Angara, "0-6.0-1", "", BFS),
	}
}

// TestStoredRoutesV2: tables icn builds are written in version 2, by
// EncodeStoredTable and by EncodeStoredRoutes alike, and read back to
// the same routes; the same routes out of the table's order are written
// in version 1 and read back in their order; version 2 is smaller (by
// more than 5 times for the box); every cut of a value and every bit
// flipped in it is reported as damage or read as other routes, never a
// panic.
func TestStoredRoutesV2(t *testing.T) {
	for name, tb := range storedV2Tables(t) {
		t.Run(name, func(t *testing.T) {
			tf, err := tb.JSON(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			b, err := EncodeStoredTable(context.Background(), tb)
			if err != nil {
				t.Fatal(err)
			}
			if b2 := mustEncode(t, tf); string(b2) != string(b) {
				t.Fatal("EncodeStoredRoutes and EncodeStoredTable differ")
			}
			if string(b[:3]) != string(storedV2[:]) {
				t.Fatalf("written as % x…, want version 2", b[:3])
			}
			back := tb.JSONHeader()
			if err := DecodeStoredRoutes(b, back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Routes, tf.Routes) {
				t.Fatal("the decoded routes differ from those encoded")
			}
			// Out of order: the first two routes swapped.
			sw := *tf
			sw.Routes = slices.Clone(tf.Routes)
			sw.Routes[0], sw.Routes[1] = sw.Routes[1], sw.Routes[0]
			v1 := mustEncode(t, &sw)
			if StoredRoutesVersion(v1) != 1 {
				t.Fatal("routes out of the table's order written in version 2")
			}
			back = tb.JSONHeader()
			if err := DecodeStoredRoutes(v1, back); err != nil || !reflect.DeepEqual(back.Routes, sw.Routes) {
				t.Fatalf("version 1: %v, or other routes", err)
			}
			if len(tf.Routes) > 10 && len(b) >= len(v1) || name == "box" && 5*len(b) > len(v1) {
				t.Errorf("version 2 takes %d bytes, version 1 %d", len(b), len(v1))
			}
			t.Logf("%d routes: version 2 %d bytes, version 1 %d", len(tf.Routes), len(b), len(v1))
			// Version 1 in the table's order is written again as the
			// same version 2; out of order, or version 2, as it is.
			if got, err := RecodeStoredRoutes(storedV1Of(t, tf), tb.JSONHeader(), 2); err != nil || string(got) != string(b) {
				t.Errorf("version 1 in order recoded: %v, or not as EncodeStoredTable writes it", err)
			}
			for _, same := range [][]byte{v1, b} {
				if got, err := RecodeStoredRoutes(same, tb.JSONHeader(), 2); err != nil || string(got) != string(same) {
					t.Errorf("recoded as other bytes: %v", err)
				}
			}
			// Version 2 written in version 1 and back.
			one, err := RecodeStoredRoutes(b, tb.JSONHeader(), 1)
			if err != nil || string(one) != string(storedV1Of(t, tf)) {
				t.Fatalf("version 2 recoded in version 1: %v, or other bytes", err)
			}
			if got, err := RecodeStoredRoutes(one, tb.JSONHeader(), 2); err != nil || string(got) != string(b) {
				t.Errorf("and back: %v, or other bytes", err)
			}
			checkDamage(t, b, tb.JSONHeader())
		})
	}
}

// storedV1Of writes tf's routes in version 1, whatever their order.
func storedV1Of(t *testing.T, tf *TableJSON) []byte {
	t.Helper()
	index := map[int]int{}
	for i, c := range tf.Active {
		index[CoordID(c, tf.Dims)] = i
	}
	b := binary.AppendUvarint(nil, uint64(len(tf.Routes)))
	prevSrc, prevDst := 0, 0
	for _, r := range tf.Routes {
		src, dst := index[CoordID(r.Src, tf.Dims)], index[CoordID(r.Dst, tf.Dims)]
		b = binary.AppendVarint(binary.AppendVarint(b, int64(src-prevSrc)), int64(dst-prevDst))
		dirs, err := AppendNamedDirs(nil, r.Dirs)
		if err != nil {
			t.Fatal(err)
		}
		b = AppendRuns(b, dirs)
		prevSrc, prevDst = src, dst
	}
	return b
}

// checkDamage cuts b at every length and flips every bit of its first
// 256 bytes: a cut is damage; a flip is damage or other routes.
func checkDamage(t *testing.T, b []byte, head *TableJSON) {
	t.Helper()
	for n := range len(b) {
		if err := CheckStoredRoutes(b[:n], head); err == nil || !strings.Contains(err.Error(), "damaged") {
			t.Fatalf("cut to %d of %d bytes: %v", n, len(b), err)
		}
	}
	bad := slices.Clone(b)
	for i := range min(len(b), 256) * 8 {
		bad[i/8] ^= 1 << (i % 8)
		if err := CheckStoredRoutes(bad, head); err != nil && !strings.Contains(err.Error(), "damaged") {
			t.Fatalf("bit %d flipped: %v", i, err)
		}
		bad[i/8] ^= 1 << (i % 8)
	}
}

// TestStoredRoutesV2Refused: a predicted route with no route of its offset
// before it, a count of routes not m·(m−1), predicted routes past the
// end and an active node outside the torus are damage.
func TestStoredRoutesV2Refused(t *testing.T) {
	head := &TableJSON{Dims: []int{3, 2}, Active: [][]int{{0, 0}, {1, 0}, {2, 0}}}
	cases := []struct {
		name string
		b    []byte
		head *TableJSON
		want string
	}{
		{"predicted first", []byte{0x80, 0, 2, 6, 1}, head, "no route before it"},
		{"count", []byte{0x80, 0, 2, 5, 5}, head, "route count"},
		{"past the end", []byte{0x80, 0, 2, 6, 7}, head, "predicted"},
		{"node outside", []byte{0x80, 0, 2, 2, 0, 1, 0x00}, &TableJSON{Dims: []int{3, 2}, Active: [][]int{{0, 0}, {0, 2}}}, "not a node"},
		{"no active nodes", []byte{0x80, 0, 2, 0}, &TableJSON{Dims: []int{3, 2}}, "route count"},
		{"version 4", []byte{0x80, 0, 4, 6, 0, 0}, head, "not 2"},
		{"version 3 base cut", []byte{0x80, 0, 3, 6, 0, 0}, head, "length of the base routes"},
		{"version 3 base of version 1", []byte{0x80, 0, 3, 1, 0, 0}, head, "not of version 2"},
		{"version cut", []byte{0x80, 0}, head, "cut short"},
	}
	for _, c := range cases {
		if err := CheckStoredRoutes(c.b, c.head); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// FuzzStoredRoutes: reading arbitrary bytes as the stored routes of a
// table never panics, and what is read is written back to the same
// routes.
func FuzzStoredRoutes(f *testing.F) {
	tables := storedV2Tables(f)
	names := slices.Sorted(maps.Keys(tables))
	for i, name := range names {
		b, err := EncodeStoredTable(context.Background(), tables[name])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), b)
		// Version 3: the routes with the first one replaced.
		if tb := tables[name]; tb.NumRoutes() > 0 {
			rec := AppendRuns(nil, tb.AppendDirs(0, nil))
			f.Add(uint8(i), appendStoredV3(b, []storedPatch{{0, rec[len(rec)-countRuns(rec):]}}))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		head := tables[names[int(which)%len(names)]].JSONHeader()
		tf := *head
		if DecodeStoredRoutes(b, &tf) != nil {
			return
		}
		again, err := EncodeStoredRoutes(&tf)
		if err != nil {
			return // steps no table holds (a route of 128 runs)
		}
		back := *head
		if err := DecodeStoredRoutes(again, &back); err != nil || !reflect.DeepEqual(back.Routes, tf.Routes) {
			t.Fatalf("read, written and read again: %v, or other routes", err)
		}
	})
}

// TestStoredTableVerifies: a table kept in the stored form (either
// version) is verified as the TableJSON with its routes is: the same
// report for every table of storedV2Tables, with one route sent a step
// astray and without; a table of another torus is refused alike.
func TestStoredTableVerifies(t *testing.T) {
	ctx := context.Background()
	for name, tb := range storedV2Tables(t) {
		tf, err := tb.JSON(ctx)
		if err != nil {
			t.Fatal(err)
		}
		astray := *tf
		astray.Routes = slices.Clone(tf.Routes)
		last := &astray.Routes[len(astray.Routes)-1]
		last.Dirs = append(slices.Clone(last.Dirs), "+X")
		for _, c := range []*TableJSON{tf, &astray} {
			want, err := tb.Router().Verify(ctx, c, VerifyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if (c == &astray) != (want.Err() != nil) {
				t.Fatalf("%s: a route astray %v, violations %v", name, c == &astray, want.Violations)
			}
			v2 := mustEncode(t, c)
			for version, routes := range map[string][]byte{"2": v2, "1": storedV1Of(t, c)} {
				got, err := tb.Router().Verify(ctx, StoredTable{Header: tb.JSONHeader(), Routes: routes}, VerifyOptions{})
				if err != nil {
					t.Fatalf("%s, version %s: %v", name, version, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s, version %s: report %+v, want %+v", name, version, got, want)
				}
			}
		}
	}
	other := buildFor(t, "4x4", "", AngaraStar, "", "", BFS)
	tb := storedV2Tables(t)["box"]
	b, _ := EncodeStoredTable(ctx, tb)
	if _, err := other.Router().Verify(ctx, StoredTable{Header: tb.JSONHeader(), Routes: b}, VerifyOptions{}); err == nil || !strings.Contains(err.Error(), "dims") {
		t.Errorf("a table of another torus: %v", err)
	}
}
