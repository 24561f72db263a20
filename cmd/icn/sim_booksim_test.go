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

// BookSim2's own example examples/mesh88_lat (testdata/booksim_mesh88_lat
// is that file, unchanged, from the booksim/booksim2 repository at commit
// 28f43299) runs as it is: its credit delay, tail-credit rule and input
// speedup are modelled. The run is shortened on the command line.
func TestSimBookSimMesh88Lat(t *testing.T) {
	file, err := filepath.Abs(filepath.Join("testdata", "booksim_mesh88_lat"))
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runICN(t, t.TempDir(), "sim", "--booksim", file, "--warmup", "1000", "--cycles", "2000", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"mesh:8x8", "8 VCs × 8 flits", "staged router RC 0, VA 1, SA 1, ST 1",
		"credits 2 cycles later", "VCs freed by the tail's credit", "input speedup 2", "conserved"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	var pts []struct {
		Offered   float64 `json:"offered"`
		Accepted  float64 `json:"accepted"`
		Latency   float64 `json:"latency_avg"`
		Conserved bool    `json:"conserved"`
	}
	out, errOut, code = runICN(t, t.TempDir(), "sim", "--booksim", file, "--warmup", "1000", "--cycles", "2000", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &pts) != nil || len(pts) != 1 {
		t.Fatalf("--json: exit %d: %s\n%s", code, errOut, out)
	}
	// 0.005 packets of 20 flits; the zero-load latency is 46 cycles.
	if p := pts[0]; p.Offered != 0.1 || !p.Conserved || p.Accepted < 0.08 || p.Latency < 46 || p.Latency > 120 {
		t.Errorf("mesh88_lat: %+v", p)
	}
	_, errOut, code = runICN(t, t.TempDir(), "sim", "--booksim", file, "--credit-delay", "-1")
	if code != 2 || !strings.Contains(errOut, "credit delay -1") {
		t.Errorf("--credit-delay -1: exit %d, %q", code, errOut)
	}
}
