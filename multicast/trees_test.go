package multicast

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// A third party re-verifies the --trees-out file: it decodes the JSON into
// its own types, rebuilds every tree from the node-name pairs and ports,
// checks it with its own BFS (tree, members reached, minimal height) and
// recounts the EFI per cable, which must match the recorded maximum.
func TestTreesFileThirdPartyCheck(t *testing.T) {
	for _, spec := range []string{"torus:4x4:endpoints=2", "dragonfly:a=4,p=2,h=2", "torus:2x2x3:endpoints=1"} {
		f := loadFabric(t, spec)
		gs := testGroups(t, f, 11, 30)
		var results []*Result
		for _, a := range algoList(t, "minhop", "sssp-new", "fulb") {
			res, err := Run(f.h, a, gs, Options{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			results = append(results, res)
		}
		var buf bytes.Buffer
		if err := WriteTrees(&buf, f.g, spec, "random", gs, results); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Topo string
			Runs []struct {
				Algo   string
				MaxEFI int `json:"max_efi"`
				Groups []struct {
					Root    string
					Members []string
					Edges   [][]string
					Ports   []int
				}
			}
		}
		if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		g, err := topology.Parse(doc.Topo)
		if err != nil {
			t.Fatal(err)
		}
		ad := newAllDist(g)
		if len(doc.Runs) != len(results) {
			t.Fatalf("%d runs", len(doc.Runs))
		}
		for ri, run := range doc.Runs {
			type cable struct {
				node string
				port int
			}
			efi := map[cable]int{}
			for gi, gr := range run.Groups {
				tr := Tree{Root: int32(g.NodeByName(gr.Root))}
				for j, e := range gr.Edges {
					c := g.PortChannel(g.NodeByName(e[0]), gr.Ports[j])
					if c < 0 || g.NodeName(g.Dst(c)) != e[1] {
						t.Fatalf("%s %s: edge %v port %d does not exist", spec, run.Algo, e, gr.Ports[j])
					}
					tr.Edges = append(tr.Edges, int32(c))
					// Name the cable by its lower end so both directions count once.
					a, b := cable{e[0], gr.Ports[j]}, cable{e[1], g.DstPort(c)}
					if b.node < a.node {
						a = b
					}
					efi[a]++
				}
				var mem []int32
				for _, m := range gr.Members {
					mem = append(mem, int32(g.NodeByName(m)))
				}
				if !slices.Equal(mem, gs[gi].Members) {
					t.Fatalf("%s: members of group %d differ", spec, gi)
				}
				if err := checkTree(ad, mem, tr); err != nil {
					t.Fatalf("%s %s group %d: %v", spec, run.Algo, gi, err)
				}
			}
			top := 0
			for _, n := range efi {
				top = max(top, n)
			}
			if top != run.MaxEFI || top != results[ri].Max {
				t.Fatalf("%s %s: recounted max EFI %d, file says %d, run said %d", spec, run.Algo, top, run.MaxEFI, results[ri].Max)
			}
		}
		// The package's own reader gives back the same trees.
		tf, err := ReadTrees(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		for ri := range tf.Runs {
			rgs, rts, err := tf.Runs[ri].Resolve(f.g)
			if err != nil {
				t.Fatal(err)
			}
			for i := range rts {
				if rts[i].Root != results[ri].Trees[i].Root || !slices.Equal(rts[i].Edges, results[ri].Trees[i].Edges) ||
					!slices.Equal(rgs[i].Members, gs[i].Members) {
					t.Fatalf("%s run %d group %d differs after the round trip", spec, ri, i)
				}
			}
			st, ht, err := CheckRun(f.h, rgs, rts)
			if err != nil || st != results[ri].EFIStats || ht != results[ri].MaxHeight {
				t.Fatalf("CheckRun: %v %+v", err, st)
			}
		}
	}
}

func TestTreesFileErrors(t *testing.T) {
	f := loadFabric(t, "fattree:k=2,n=2")
	for _, c := range []struct{ text, want string }{
		{`{`, "trees file"},
		{`{"format":"other"}`, "format"},
		{`{"format":"icn-mcast-trees/1","runs":[{"algo":"x","groups":[{"name":"a","root":"nosuch","members":["h0"]}]}]}`, "root \"nosuch\""},
		{`{"format":"icn-mcast-trees/1","runs":[{"algo":"x","groups":[{"name":"a","root":"L1-0","members":["h0"],"edges":[["L1-0","h2"]]}]}]}`, "no link L1-0→h2"},
		{`{"format":"icn-mcast-trees/1","runs":[{"algo":"x","groups":[{"name":"a","root":"L1-0","members":["h0"],"edges":[["L1-0","h0"]],"ports":[2]}]}]}`, "leads to h1"},
		{`{"format":"icn-mcast-trees/1","runs":[{"algo":"x","groups":[{"name":"a","root":"L1-0","members":["h0"],"edges":[["L1-0","h0"]],"ports":[]}]}]}`, "0 ports for 1 edges"},
		{`{"format":"icn-mcast-trees/1","runs":[{"algo":"x","groups":[{"name":"a","root":"L1-0","members":["h2"],"edges":[["L1-0","h0"]]}]}]}`, "not reached"},
		{`{"format":"icn-mcast-trees/1","runs":[{"algo":"x","groups":[{"name":"a","root":"L1-0","members":[]}]}]}`, "empty group"},
	} {
		err := func() error {
			tf, err := ReadTrees(strings.NewReader(c.text))
			if err != nil {
				return err
			}
			for i := range tf.Runs {
				gs, ts, err := tf.Runs[i].Resolve(f.g)
				if err != nil {
					return err
				}
				if _, _, err := CheckRun(f.h, gs, ts); err != nil {
					return err
				}
			}
			return nil
		}()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.text, err, c.want)
		}
	}
}
