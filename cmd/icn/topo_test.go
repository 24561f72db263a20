package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// TestTopoExportImportInProcess: a network written by runTopoExport and
// read back by runTopoImport has the node, end-node, switch and link
// counts of the network parsed from the spec, with and without failures.
func TestTopoExportImportInProcess(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, tc := range []struct{ spec, failLinks string }{
		{"torus:4x4x2", ""},
		{"fattree:k=2,n=3", ""},
		{"dragonfly:a=4,p=2,h=2", ""},
		{"torus:4x4", "0.0+X,3.3+Y"},
	} {
		want, err := loadTopo(tc.spec, tc.failLinks, "")
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, "net.json")
		var ex bytes.Buffer
		eo := topoExportOptions{topo: topoFlags{spec: tc.spec, failLinks: tc.failLinks}, format: "json", outPath: file}
		if err := runTopoExport(ctx, eo, &ex); err != nil {
			t.Fatalf("%s: export: %v", tc.spec, err)
		}
		if ex.Len() != 0 {
			t.Errorf("%s: export with --output wrote %d bytes to stdout", tc.spec, ex.Len())
		}
		var out bytes.Buffer
		if err := runTopoImport(ctx, topoImportOptions{out: output{json: true}, file: file}, &out); err != nil {
			t.Fatalf("%s: import: %v", tc.spec, err)
		}
		var sum struct {
			File                              string
			Nodes, Endpoints, Switches, Links int
		}
		if err := json.Unmarshal(out.Bytes(), &sum); err != nil {
			t.Fatalf("%s: %v in %s", tc.spec, err, out.String())
		}
		if sum.File != file || sum.Nodes != want.NumNodes() || sum.Endpoints != want.Count(topology.Endpoint) ||
			sum.Switches != want.Count(topology.Switch) || sum.Links != want.NumLinks() {
			t.Errorf("%s: import of the export says %+v; the spec has %d nodes, %d end nodes, %d switches, %d links",
				tc.spec, sum, want.NumNodes(), want.Count(topology.Endpoint), want.Count(topology.Switch), want.NumLinks())
		}
	}
}
