package multicast

import (
	"bytes"
	"testing"
)

// Workload specs: parsing never panics; accepted small specs build groups
// on a small fabric without panicking, and every group is valid.
func FuzzParseWorkload(f *testing.F) {
	for _, s := range []string{"grid2d:8x8", "grid3d:4x4x4,ppn=2", "hier:size=4.2,procs=60", "random:count=5,size=2-4",
		"random:count=3,size=9,procs=20,ppn=4", "grid2d:8x8:ppn=4", "file:x", "grid3d:1x1x64"} {
		f.Add(s)
	}
	fab := loadFabric(f, "fattree:k=4,n=3")
	f.Fuzz(func(t *testing.T, spec string) {
		w, err := ParseWorkload(spec)
		if err != nil || w.Kind == "file" {
			return
		}
		if w.Count*max(w.MaxSize, 1) > 1<<14 {
			return // valid but too big for a fuzz iteration
		}
		gs, err := w.Groups(fab.g, 1)
		if err != nil {
			return
		}
		for _, g := range gs {
			if err := CheckMembers(fab.g, g.Members); err != nil {
				t.Fatalf("%q: group %s: %v", spec, g.Name, err)
			}
		}
	})
}

// Group files: never panic; accepted groups are valid and route.
func FuzzParseGroups(f *testing.F) {
	for _, s := range []string{"a: h0 h1 h2\nb: 3, 4 # c\n", "h0 L1-0\n", "x:\n", "::\n", "a: h0 h0\n", "\n\n#\n"} {
		f.Add([]byte(s))
	}
	fab := loadFabric(f, "fattree:k=4,n=3")
	f.Fuzz(func(t *testing.T, data []byte) {
		gs, err := ParseGroups(fab.g, data)
		if err != nil {
			return
		}
		if _, err := Run(fab.h, Algo{Kind: FULB, Rotate: true}, gs, Options{}, nil); err != nil {
			t.Fatalf("accepted groups do not route: %v", err)
		}
	})
}

// Trees files: reading, resolving and checking never panic or hang.
func FuzzReadTrees(f *testing.F) {
	fab := loadFabric(f, "fattree:k=2,n=2")
	gs := []Group{{Name: "a", Members: []int32{0, 1, 2}}, {Name: "b", Members: []int32{3, int32(fab.g.NodeByName("L1-0"))}}}
	res, _ := Run(fab.h, Algo{Kind: FULB, Rotate: true}, gs, Options{}, nil)
	var buf bytes.Buffer
	WriteTrees(&buf, fab.g, "fattree:k=2,n=2", "x", gs, []*Result{res})
	f.Add(buf.Bytes())
	f.Add([]byte(`{"format":"icn-mcast-trees/1","runs":[{"algo":"x","groups":[{"name":"a","root":"L1-0","members":["h0"],"edges":[["L1-0","h0"]],"ports":[1]}]}]}`))
	f.Add([]byte(`{"format":"icn-mcast-trees/1","runs":[{"groups":[{"root":"L2-0","members":["h0"],"edges":[["L2-0","L1-0"],["L1-0","L2-0"]]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tf, err := ReadTrees(bytes.NewReader(data))
		if err != nil {
			return
		}
		for i := range tf.Runs {
			gs, ts, err := tf.Runs[i].Resolve(fab.g)
			if err != nil {
				continue
			}
			CheckRun(fab.h, gs, ts)
		}
	})
}
