package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// icn sim --booksim reads a BookSim2 configuration; flags override it;
// keys icn does not model are refused by name.
func TestSimBookSimFile(t *testing.T) {
	dir := t.TempDir()
	cfg := "topology = torus; k = 4; n = 2; routing_function = dim_order; num_vcs = 2;\n" +
		"packet_size = 4; injection_rate = 0.05; sample_period = 300; max_samples = 2; warmup_periods = 1;\n"
	if err := os.WriteFile(filepath.Join(dir, "t.cfg"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.cfg"), []byte(cfg+"vc_allocator = max_size;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args    []string
		offered float64
	}{
		{[]string{"sim", "--booksim", "t.cfg", "--json"}, 0.2}, // 0.05 packets of 4 flits
		{[]string{"sim", "--booksim", "t.cfg", "--rate", "0.1", "--json"}, 0.1},
	} {
		out, errOut, code := runICN(t, dir, tc.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errOut)
		}
		var pts []struct {
			Offered   float64 `json:"offered"`
			Conserved bool    `json:"conserved"`
		}
		if err := json.Unmarshal([]byte(out), &pts); err != nil || len(pts) != 1 {
			t.Fatalf("%v: %v\n%s", tc.args, err, out)
		}
		if pts[0].Offered != tc.offered || !pts[0].Conserved {
			t.Errorf("%v: %+v, want offered %g", tc.args, pts[0], tc.offered)
		}
	}
	_, errOut, code := runICN(t, dir, "sim", "sweep", "--booksim", "bad.cfg")
	if code == 0 || !strings.Contains(errOut, "vc_allocator") {
		t.Errorf("bad key: exit %d, %q", code, errOut)
	}
}
