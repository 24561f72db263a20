package routing

import (
	"math/rand/v2"
	"reflect"
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
	if err := CheckStoredRoutes(b, len(tf.Active)); err != nil {
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
		if err := CheckStoredRoutes(b[:n], len(tf.Active)); err == nil || !strings.Contains(err.Error(), "damaged") {
			t.Fatalf("cut to %d of %d bytes: %v", n, len(b), err)
		}
	}
	// The last route's first run byte, made a direction of a 7th dimension.
	bad := append([]byte(nil), b...)
	bad[len(bad)-127] = 0xc0
	if err := CheckStoredRoutes(bad, len(tf.Active)); err == nil || !strings.Contains(err.Error(), "direction code 12") {
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
