package routing

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

func compactBytes(t testing.TB, tb *Table) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := tb.WriteRoutes(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestCompactRoundTrip writes tables in both formats and checks both
// streams: the same figures as the table, no violations, every route
// decoded back equal to the table's.
func TestCompactRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		spec, faults  string
		kind          Kind
		active, trans string
		algo          Algo
	}{
		{"4x4x2", "", AngaraStar, "", "", BFS},
		{"4x4x2", "0.0.0+X,1.2.1+Y,3.3.0+Z", AngaraMinus, "", "", BFS},
		{"5x4", "1.1+X,2.2+Y", AngaraStar, "0-3.0-3", "4.0-3", BFS},
		{"6x4", "", Dirbit, "", "", Baseline},
		{"17x2", "", DOR, "", "", BFS}, // runs longer than 16 steps are split
		{"3x3x2x2", "0.0.0.0+W", Angara, "", "", BFS},
	} {
		tb := buildFor(t, tc.spec, tc.faults, tc.kind, tc.active, tc.trans, tc.algo)
		for _, format := range []string{"compact", "json"} {
			b := fileBytes(t, tb, format)
			rep, r, err := verifyFile(bytes.NewReader(b), "", "", 2)
			if err != nil {
				t.Fatalf("%s %s: %v", tc.spec, format, err)
			}
			if len(rep.Violations) > 0 && (tb.DeadlockFree || len(rep.Violations) > 1 || rep.Violations[0].Kind != "deadlock") {
				t.Fatalf("%s %s: %v", tc.spec, format, rep.Violations[0])
			}
			if !statsClose(rep.Figures, tb.Figures) || rep.Routes != tb.NumRoutes() || (rep.Cycle == nil) != tb.DeadlockFree {
				t.Fatalf("%s %s: check gives %+v, %d routes; table %+v, %d", tc.spec, format, rep.Figures, rep.Routes, tb.Figures, tb.NumRoutes())
			}
			if r.Rule().String() != tb.r.rule.String() {
				t.Fatalf("%s: rule %s", tc.spec, r.Rule())
			}
		}
		// decode every route back
		b := compactBytes(t, tb)
		c := &crcReader{br: bufioReader(b)}
		_, active, _, err := readRoutesHeader(c)
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		var want []Dir
		err = readRoutesRecords(context.Background(), c, len(active), tb.r.t.nd, func(a, b int, dirs []Dir) {
			want = tb.AppendDirs(pairIndex(len(active), a, b), want[:0])
			if i != pairIndex(len(active), a, b) || FormatDirs(dirs) != FormatDirs(want) {
				t.Fatalf("%s: route %d: %v, want %v", tc.spec, i, dirs, want)
			}
			i++
		})
		if err != nil || i != tb.NumRoutes() {
			t.Fatalf("%s: %v after %d routes", tc.spec, err, i)
		}
	}
}

// TestCompactDamage truncates the file at every length and alters every
// byte: the check never panics, never passes a damaged file, and a
// damaged record is named.
func TestCompactDamage(t *testing.T) {
	tb := buildFor(t, "3x3", "1.1+X", AngaraStar, "", "", BFS)
	b := compactBytes(t, tb)
	for n := 0; n < len(b); n++ {
		rep, _, err := verifyFile(bytes.NewReader(b[:n]), "", "", 1)
		if err == nil && len(rep.Violations) == 0 {
			t.Fatalf("truncated at %d of %d bytes: accepted", n, len(b))
		}
	}
	named := 0
	for i := range b {
		for _, x := range []byte{1, 0x80} {
			d := bytes.Clone(b)
			d[i] ^= x
			rep, _, err := verifyFile(bytes.NewReader(d), "", "", 1)
			if err == nil && len(rep.Violations) == 0 {
				t.Fatalf("byte %d ^ %#x: accepted", i, x)
			}
			var re *RecordError
			if errors.As(err, &re) && re.What == "record" {
				named++
				if re.Record < 1 || re.Record > len(tb.Active)+1 {
					t.Fatalf("byte %d: record %d of %d", i, re.Record, len(tb.Active))
				}
			}
		}
	}
	if named == 0 {
		t.Fatal("no damaged record named")
	}
}

// TestCompactBadRoutes writes well-formed files (valid checksums) whose
// routes are wrong: for other dims, across a failed link, missing or
// repeated; the check reports the first bad route by number.
func TestCompactBadRoutes(t *testing.T) {
	tb := buildFor(t, "4x4", "", AngaraStar, "", "", BFS)
	b := compactBytes(t, tb)
	// a failed link crossed by some routes
	rep, _, err := verifyFile(bytes.NewReader(b), "1.1+X", "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Violations) == 0 || rep.Violations[0].Kind != "failed-link" {
		t.Fatalf("failed link: %v", rep.Violations)
	}
	first := 0
	for i := 0; i < tb.NumRoutes() && first == 0; i++ {
		for _, c := range tb.Route(i).Channels {
			if tb.Graph().LinkName(int(c)>>1) == "1.1+X" {
				first = i + 1
				break
			}
		}
	}
	if rep.Violations[0].Record != first {
		t.Fatalf("first violation at route %d, want %d", rep.Violations[0].Record, first)
	}
	// a file for other dims: the header of a 4x4x1… table on a 4x4 body
	for _, dims := range []string{`"dims":[4,4,2]`, `"dims":[4]`} {
		d := rewriteHeader(t, b, func(h string) string { return strings.Replace(h, `"dims":[4,4]`, dims, 1) })
		rep, _, err := verifyFile(bytes.NewReader(d), "", "", 1)
		if err == nil && len(rep.Violations) == 0 {
			t.Fatalf("dims %s: accepted", dims)
		}
	}
}

// rewriteHeader changes the header line and recomputes the header
// checksum, leaving the records alone.
func rewriteHeader(t *testing.T, b []byte, f func(string) string) []byte {
	t.Helper()
	rest := b[len(RoutesMagic):]
	nl := bytes.IndexByte(rest, '\n')
	h := f(string(rest[:nl+1]))
	// the node block runs until the header CRC: re-encode it from the
	// original lengths by decoding it
	c := &crcReader{br: bufioReader(b)}
	if _, _, _, err := readRoutesHeader(c); err != nil {
		t.Fatal(err)
	}
	consumed := len(b) - c.br.Buffered()
	nodes := b[len(RoutesMagic)+nl+1 : consumed-4]
	out := append([]byte(RoutesMagic), h...)
	out = append(out, nodes...)
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(append([]byte(h), nodes...), castagnoli))
	return append(out, b[consumed:]...)
}

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// FuzzVerifyFile: checking arbitrary bytes in either format never panics.
func FuzzVerifyFile(f *testing.F) {
	tb := buildFor(f, "3x2", "0.0+X", AngaraStar, "", "", BFS)
	f.Add(compactBytes(f, tb))
	f.Add(tableJSON(f, tb))
	f.Add([]byte(`{"dims":[2,2],"rules":"angara","routes":[{"src":[0,0],"dst":[1,1],"dirs":["+Y","+X"]}]}`))
	mixed := buildFor(f, "3x2:mesh=X", "", AngaraStar, "", "", BFS)
	f.Add(compactBytes(f, mixed))
	f.Add(tableJSON(f, mixed))
	f.Fuzz(func(t *testing.T, b []byte) {
		verifyFile(bytes.NewReader(b), "", "", 1)
	})
}

// FuzzParseRouteFast: whatever the reflection-free route parser accepts,
// encoding/json accepts with the same content.
func FuzzParseRouteFast(f *testing.F) {
	f.Add([]byte(`{"src":[0,1],"dst":[2,3],"dirs":["+X","-Y"]}`))
	f.Add([]byte(` { "dirs" : [ ] , "dst":[1], "src" :[ 0 ] } `))
	f.Add([]byte(`{"src":[0],"dst":[1],"dirs":["+X\u0041"]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast RouteJSON
		if !parseRouteFast(b, &fast) {
			return
		}
		var slow RouteJSON
		if err := json.Unmarshal(b, &slow); err != nil {
			t.Fatalf("%q: fast accepts, json: %v", b, err)
		}
		if !slices.Equal(fast.Src, slow.Src) || !slices.Equal(fast.Dst, slow.Dst) || !slices.Equal(fast.Dirs, slow.Dirs) {
			t.Fatalf("%q: fast %+v, json %+v", b, fast, slow)
		}
	})
}

// TestWriteRoutesJSONMatchesWriteRoutes: a table written from its JSON
// form is byte for byte the file WriteRoutes writes, and bad JSON tables
// are refused before anything is written.
func TestWriteRoutesJSONMatchesWriteRoutes(t *testing.T) {
	for _, tc := range []struct {
		spec            string
		active, transit string
	}{
		{"torus:4x4x4", "0.0.0,1.0.0,2.0.0,0.1.0,1.1.0", "2.1.0"},
		{"torus:6x4x2x2", "0.0.0.0,1.0.0.0,0.1.0.0,1.1.0.0,0.0.0.1,1.0.0.1,0.1.0.1,1.1.0.1", ""},
	} {
		g, err := topology.Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		r := mustRouter(t, g, AngaraStar)
		active, _ := g.ParseNodes(tc.active)
		var transit []int
		if tc.transit != "" {
			transit, _ = g.ParseNodes(tc.transit)
		}
		tb, err := r.Build(context.Background(), active, transit, BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var want, js, got bytes.Buffer
		if err := tb.WriteRoutes(&want); err != nil {
			t.Fatal(err)
		}
		if err := tb.WriteJSON(&js); err != nil {
			t.Fatal(err)
		}
		tf, err := ReadTableJSON(&js)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteRoutesJSON(&got, tf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("%s: %d bytes from the JSON table, %d from the table", tc.spec, got.Len(), want.Len())
		}
		missing := *tf
		missing.Routes = tf.Routes[1:]
		var out bytes.Buffer
		if err := WriteRoutesJSON(&out, &missing); err == nil || out.Len() != 0 {
			t.Errorf("%s: a table missing a route: %v, %d bytes written", tc.spec, err, out.Len())
		}
	}
}

// A check that adds failures reports only the routes they break, in both
// formats: the file's figures describe its own fabric and are not
// compared (they differ without any route being wrong).
func TestCheckWithAddedFailuresReportsRoutesOnly(t *testing.T) {
	tb := buildFor(t, "4x4", "", AngaraStar, "", "", BFS)
	for _, format := range []string{"compact", "json"} {
		rep, _, err := verifyFile(bytes.NewReader(fileBytes(t, tb, format)), "0.0+X", "", 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Violations) == 0 {
			t.Fatalf("%s: a failed link no route crosses?", format)
		}
		for _, v := range rep.Violations {
			if v.Kind != "failed-link" {
				t.Fatalf("%s: violation %q besides the broken routes: %s", format, v.Kind, v.Msg)
			}
		}
	}
	if s := tb.Figures.String(); !strings.Contains(s, "diameter") || strings.Contains(s, "{") {
		t.Fatalf("figures read %q", s)
	}
}

// fileBytes is a table written as a file in format "compact" or "json".
func fileBytes(t *testing.T, tb *Table, format string) []byte {
	t.Helper()
	if format == "compact" {
		return compactBytes(t, tb)
	}
	return tableJSON(t, tb)
}

// TestAppendRuns checks the run bytes of routes against a direct
// expansion, with runs of more than 16 steps and counts of 128 runs and
// more (a two-byte uvarint).
func TestAppendRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	for _, n := range []int{0, 1, 5, 17, 40, 127, 128, 300} {
		var dirs []Dir
		for len(dirs) < n {
			d := Dir(rng.IntN(6))
			for r := 1 + rng.IntN(20); r > 0 && len(dirs) < n; r-- {
				dirs = append(dirs, d)
			}
		}
		if n >= 127 {
			for i := range dirs {
				dirs[i] = Dir(i % 2) // n runs of one step
			}
		}
		b := AppendRuns([]byte{0xaa}, dirs)
		if b[0] != 0xaa {
			t.Fatal("prefix overwritten")
		}
		runs, k := binary.Uvarint(b[1:])
		if k <= 0 || int(runs) != len(b)-1-k {
			t.Fatalf("%d steps: count %d (%d bytes) for %d run bytes", n, runs, k, len(b)-1-k)
		}
		var got []Dir
		for _, x := range b[1+k:] {
			for r := int(x&15) + 1; r > 0; r-- {
				got = append(got, Dir(x>>4))
			}
		}
		if !slices.Equal(got, dirs) {
			t.Fatalf("%d steps: decoded %v, want %v", n, got, dirs)
		}
		checkCutRuns(t, n, b[1:], dirs)
	}
	checkRunsRefused(t)
}

// checkCutRuns decodes enc, the bytes AppendRuns wrote for dirs followed
// by a trailer, with CutRuns and expands them back (AppendRunDirs,
// AppendRunNames), and encodes the names again (AppendNamedDirs).
func checkCutRuns(t *testing.T, n int, enc []byte, dirs []Dir) {
	t.Helper()
	enc = append(slices.Clip(enc), 0x55, 0x66)
	runs, rest, err := CutRuns(enc, 6)
	if err != nil || !bytes.Equal(rest, []byte{0x55, 0x66}) {
		t.Fatalf("%d steps: CutRuns: rest %x, %v", n, rest, err)
	}
	if got := AppendRunDirs([]Dir{9}, runs); !slices.Equal(got[1:], dirs) || got[0] != 9 {
		t.Fatalf("%d steps: AppendRunDirs gives %v", n, got)
	}
	names := AppendRunNames(nil, runs)
	if len(names) != len(dirs) {
		t.Fatalf("%d steps: %d names", n, len(names))
	}
	for i, d := range dirs {
		if names[i] != d.String() {
			t.Fatalf("%d steps: step %d named %q, want %q", n, i, names[i], d.String())
		}
	}
	back, err := AppendNamedDirs(nil, names)
	if err != nil || !slices.Equal(back, dirs) {
		t.Fatalf("%d steps: the names parse to %v, %v", n, back, err)
	}
	if again := AppendRuns(nil, back); !bytes.Equal(again, enc[:len(enc)-2]) {
		t.Fatalf("%d steps: encoded again %x, want %x", n, again, enc[:len(enc)-2])
	}
}

// checkRunsRefused: CutRuns refuses bytes cut short and directions of
// more dimensions than the torus has, AppendNamedDirs names that are not
// Dir.String's.
func checkRunsRefused(t *testing.T) {
	t.Helper()
	enc := AppendRuns(nil, []Dir{0, 0, 5, 2})
	for i := range enc {
		if _, _, err := CutRuns(enc[:i], 6); err == nil {
			t.Errorf("%x, cut to %d bytes, accepted", enc, i)
		}
	}
	if _, _, err := CutRuns(enc, 4); err == nil || !strings.Contains(err.Error(), "direction code 5") {
		t.Errorf("-Z of a 2-dimensional torus: %v", err)
	}
	if _, _, err := CutRuns([]byte{0x80}, 6); err == nil {
		t.Error("a uvarint cut short accepted")
	}
	for _, s := range []string{"+x", "−X", "X", "+D7", ""} {
		if _, err := AppendNamedDirs(nil, []string{"+X", s}); err == nil {
			t.Errorf("step %q accepted", s)
		}
	}
}
