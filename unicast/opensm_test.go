package unicast

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/internal/ibsimtest"
	"github.com/icn-hpc/icn/topology"
)

// OpenSM is the consumer of the dumps: on a fabric simulated by ibsim,
// `opensm -R file -U dump` must install icn's tables exactly, and OpenSM's
// own dump of what it installed must deliver every pair to the right host.
// Skipped unless opensm, ibsim, ibnetdiscover and libumad2sim are
// installed (Debian: opensm ibsim-utils infiniband-diags).
func TestOpenSMInstallsTables(t *testing.T) {
	if testing.Short() {
		t.Skip("runs OpenSM")
	}
	sim := ibsimtest.New(t)
	dir := t.TempDir()
	// The export carries icn's LIDs: ibsim sets them and OpenSM keeps
	// them, so tables computed on the export itself load as they are.
	export := exportWithLIDs(t, "fattree:m=4,n=2")
	net := filepath.Join(dir, "fabric.ibnet")
	if err := os.WriteFile(net, []byte(export), 0o644); err != nil {
		t.Fatal(err)
	}
	sim.Start(net, "h0")
	defer sim.Stop()
	check(t, sim, export, "export", "ftree", filepath.Join(dir, "export"))
	// A sweep with OpenSM's own engine, then ibnetdiscover: the fabric as a
	// site would feed it to icn.
	sim.OpenSM(filepath.Join(dir, "first"), "-R", "minhop")
	discovered := sim.IBNetDiscover()
	for _, engine := range []string{"minhop", "updn", "ftree", "dfsssp"} {
		check(t, sim, discovered, "discovered", engine, filepath.Join(dir, engine))
	}
	// The compact dump (no comments) installs the same tables.
	checkAs(t, sim, discovered, "discovered", "ftree", filepath.Join(dir, "compact"), true)
}

// check routes the fabric text with engine, has OpenSM load the dump with
// `-R file` and compares what it installed; the installed tables must
// deliver every pair to the right host.
func check(t *testing.T, s *ibsimtest.Sim, text, name, engine, dir string) {
	t.Helper()
	checkAs(t, s, text, name, engine, dir, false)
}

// checkAs is check, giving OpenSM the compact dump when compact is set.
func checkAs(t *testing.T, s *ibsimtest.Sim, text, name, engine, dir string, compact bool) {
	t.Helper()
	g, ann := importIBNet(t, text, name)
	f, err := NewFabric(g, ann)
	if err != nil {
		t.Fatal(err)
	}
	res := route(t, f, engine, 0)
	var dump, given bytes.Buffer
	res.Tables.WriteDump(&dump)
	res.Tables.WriteDump(&given)
	if compact {
		given.Reset()
		res.Tables.WriteCompactDump(&given)
	}
	os.MkdirAll(dir, 0o755)
	path := filepath.Join(dir, "icn.dump")
	os.WriteFile(path, given.Bytes(), 0o644)
	s.OpenSM(dir, "-R", "file", "-U", path)
	installed, err := os.ReadFile(filepath.Join(dir, "opensm-lfts.dump"))
	if err != nil {
		t.Fatalf("%s %s: OpenSM wrote no dump: %v", name, engine, err)
	}
	if len(dumpEntrySet(string(installed))) < len(f.Terminals()) {
		t.Fatalf("%s %s: OpenSM installed almost nothing:\n%s", name, engine, installed)
	}
	if d := dumpEntriesDiff(dump.String(), string(installed)); d != "" {
		t.Errorf("%s %s: OpenSM installed other tables: %s", name, engine, d)
	}
	back, err := ReadDump(bytes.NewReader(installed), "opensm-lfts.dump", g, ann)
	if err != nil {
		t.Fatalf("%s %s: %v", name, engine, err)
	}
	if r := audit(t, back); !r.Reachable || r.Misdelivered != 0 {
		t.Errorf("%s %s: installed tables: reachable %v, misdelivered %d (%s)", name, engine, r.Reachable, r.Misdelivered, r.FirstUnreachable)
	}
}

// An ibsim net file without GUIDs (icn assumes ibsim's assignment) whose
// LIDs ibsim sets and OpenSM keeps: the tables icn computes from the file
// alone are installed exactly.
func TestOpenSMInstallsTablesForNetFile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs OpenSM")
	}
	sim := ibsimtest.New(t)
	dir := t.TempDir()
	export := exportWithLIDs(t, "dragonfly:a=4,p=2,h=2")
	text := stripGUIDs(export)
	net := filepath.Join(dir, "fabric.net")
	if err := os.WriteFile(net, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	g, ann := importIBNet(t, text, "fabric.net")
	f, err := NewFabric(g, ann)
	if err != nil {
		t.Fatal(err)
	}
	if f.GUIDNote == "" {
		t.Fatal("no GUID warning for a net file without GUIDs")
	}
	sim.Start(net, g.NodeName(f.Terminals()[0].Node))
	defer sim.Stop()
	check(t, sim, text, "fabric.net", "dfsssp", filepath.Join(dir, "file"))
}

// dumpEntriesDiff compares the (switch GUID, LID, port) entries of two
// dumps.
func dumpEntriesDiff(a, b string) string {
	ea, eb := dumpEntrySet(a), dumpEntrySet(b)
	n := 0
	first := ""
	for k := range ea {
		if !eb[k] {
			n++
			first = k
		}
	}
	for k := range eb {
		if !ea[k] {
			n++
			first = k
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d/%d entries differ (e.g. %s)", n, len(ea), len(eb), first)
}

func dumpEntrySet(s string) map[string]bool {
	out := map[string]bool{}
	guid := ""
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, " guid 0x"); strings.HasPrefix(line, "Unicast lids") && i >= 0 {
			guid = strings.Fields(line[i+6:])[0]
		} else if f := strings.Fields(line); strings.HasPrefix(line, "0x") && len(f) >= 2 {
			out[guid+" "+f[0]+" "+f[1]] = true
		}
	}
	return out
}

// ibsim runs the InfiniBand fabric simulator for a test.
// exportWithLIDs generates spec and exports it as ibnetdiscover text that
// carries the LIDs icn assigns.
func exportWithLIDs(t *testing.T, spec string) string {
	t.Helper()
	gen, err := topology.Parse(spec)
	if err != nil {
		t.Fatal(err)
	}
	f0, err := NewFabric(gen, nil)
	if err != nil {
		t.Fatal(err)
	}
	var export bytes.Buffer
	if err := gen.WriteIBNetLIDs(&export, f0.PortLID); err != nil {
		t.Fatal(err)
	}
	return export.String()
}
