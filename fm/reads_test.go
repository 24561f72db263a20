package fm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/client"

	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

// gatedMeasure replaces a service's metrics computation by one that
// waits for release (or for its context to end) before computing, and
// reports each computation's end on ended (the context's error, nil when
// it computed).
type gatedMeasure struct {
	release chan struct{}
	started chan uint64 // failed links of the fabric being measured
	ended   chan error
}

func gateMetrics(s *Service) *gatedMeasure {
	gm := &gatedMeasure{release: make(chan struct{}), started: make(chan uint64, 8), ended: make(chan error, 8)}
	s.fm.mu.Lock()
	s.fm.measure = func(ctx context.Context, g *topology.Graph) (topology.Metrics, error) {
		gm.started <- uint64(len(g.FailedLinks()))
		select {
		case <-gm.release:
		case <-ctx.Done():
			gm.ended <- ctx.Err()
			return topology.Metrics{}, ctx.Err()
		}
		m, err := measureFabric(ctx, g)
		gm.ended <- err
		return m, err
	}
	s.fm.mu.Unlock()
	return gm
}

// TestMetricsPerFabricVersion: the metrics answered for each fabric
// version are those topology.Measure gives for that fabric, labelled with
// its version and failures; a failure's answer says pending (with the
// previous figures, labelled as such) until its computation ends, then
// gives the new figures, over HTTP too.
func TestMetricsPerFabricVersion(t *testing.T) {
	s, tok := openTest(t, t.TempDir(), "torus:4x4x4", nil)
	defer s.Close()
	ctx := context.Background()
	check := func(v client.MetricsView, ver uint64, links []string) {
		t.Helper()
		if !v.Current || v.Pending || v.For == nil || v.Metrics == nil || v.For.Version != ver || v.FabricVersion != ver ||
			!slices.Equal(v.For.FailedLinks, links) || len(v.For.FailedNodes) != 0 {
			t.Fatalf("metrics view %+v (for %+v), want current for version %d with failed links %v", v, v.For, ver, links)
		}
		s.mu.RLock()
		g := s.g
		s.mu.RUnlock()
		if want := topology.Measure(g, topology.MetricsOptions{}); !reflect.DeepEqual(*v.Metrics, want) {
			t.Fatalf("version %d: metrics %+v, topology.Measure gives %+v", ver, *v.Metrics, want)
		}
	}
	v0, err := s.WaitMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(v0, 0, []string{})

	gm := gateMetrics(s)
	if _, err := s.ChangeFailure(context.Background(), "test", client.FailureChange{Link: "0.0.0+X"}); err != nil {
		t.Fatal(err)
	}
	if n := <-gm.started; n != 1 {
		t.Fatalf("computing a fabric with %d failed links, want 1", n)
	}
	for _, v := range []client.MetricsView{s.Metrics(), s.metricsWithin(0)} {
		if v.Current || !v.Pending || v.FabricVersion != 1 || v.For == nil || v.For.Version != 0 || !reflect.DeepEqual(v.Metrics, v0.Metrics) {
			t.Fatalf("during the computation: %+v (for %+v), want pending with version 0's figures", v, v.For)
		}
	}
	srv := httptest.NewServer(api.New(s, api.Options{}))
	defer srv.Close()
	c := &apiClient{t: t, url: srv.URL, token: tok}
	code, body := c.do("GET", "/api/fabric/metrics", nil)
	if code != 200 || body["pending"] != true || body["current"] != false || body["fabric_version"] != 1.0 ||
		body["for"].(map[string]any)["version"] != 0.0 || body["diameter"] != float64(v0.Diameter) {
		t.Fatalf("GET /api/fabric/metrics during the computation: %d %v", code, body)
	}
	close(gm.release)
	v1, err := s.WaitMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(v1, 1, []string{"0.0.0+X"})
	if reflect.DeepEqual(v1.Metrics, v0.Metrics) {
		t.Error("metrics unchanged by a failed link")
	}
	code, body = c.do("GET", "/api/fabric/metrics", nil)
	if code != 200 || body["pending"] != false || body["current"] != true || body["links"] != float64(v1.Links) ||
		!reflect.DeepEqual(body["for"].(map[string]any)["failed_links"], []any{"0.0.0+X"}) {
		t.Fatalf("GET /api/fabric/metrics after the computation: %d %v", code, body)
	}

	// A restart with the link failed computes that fabric's metrics.
	dir := filepath.Dir(s.store.Name())
	s.Close()
	s, _ = openTest(t, dir, "", nil)
	defer s.Close()
	v, err := s.WaitMetrics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check(v, 0, []string{"0.0.0+X"})
}

// TestMetricsComputationStops: a computation in flight stops when a newer
// fabric version arrives (the newer one is computed) and when the service
// closes (Close waits for it).
func TestMetricsComputationStops(t *testing.T) {
	s, _ := openTest(t, t.TempDir(), "torus:4x4x4", nil)
	if _, err := s.WaitMetrics(context.Background()); err != nil {
		t.Fatal(err)
	}
	gm := gateMetrics(s)
	if _, err := s.ChangeFailure(context.Background(), "test", client.FailureChange{Link: "0.0.0+X"}); err != nil {
		t.Fatal(err)
	}
	<-gm.started
	if _, err := s.ChangeFailure(context.Background(), "test", client.FailureChange{Link: "1.0.0+Y"}); err != nil {
		t.Fatal(err)
	}
	if err := <-gm.ended; err != context.Canceled {
		t.Fatalf("the computation of version 1 ended with %v, want context.Canceled", err)
	}
	if n := <-gm.started; n != 2 {
		t.Fatalf("computing a fabric with %d failed links, want 2", n)
	}
	if v := s.metricsWithin(0); !v.Pending || v.FabricVersion != 2 || v.For.Version != 0 {
		t.Fatalf("during version 2's computation: %+v (for %+v)", v, v.For)
	}
	done := make(chan error)
	go func() { done <- s.Close() }()
	if err := <-gm.ended; err != context.Canceled {
		t.Fatalf("the computation in flight at Close ended with %v, want context.Canceled", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case <-gm.started:
		t.Error("a computation started after Close")
	default:
	}
	if v := s.metricsWithin(time.Second); v.Pending || v.Current {
		t.Errorf("after Close: %+v", v)
	}
}

// TestStoredLinkCountsMatchWalk: the link loads counted from a table's
// stored routes equal those counted from its steps, on 3D and 4D tori.
func TestStoredLinkCountsMatchWalk(t *testing.T) {
	for _, topo := range []string{"torus:4x4x4", "torus:6x4x2x2"} {
		s, _ := openTest(t, t.TempDir(), topo, nil)
		for _, m := range []int{5, 12, 16} {
			j, err := s.Submit("test", client.JobRequest{Nodes: m, Transit: 3})
			if err != nil {
				t.Fatal(err)
			}
			tf := mustTable(j)
			routes, err := routing.EncodeStoredRoutes(tf)
			if err != nil {
				t.Fatal(err)
			}
			ld := newLinkDirs(s.g)
			var lc linkCounter
			stored := lc.count(ld, tf, routes)
			walked := lc.count(ld, tf, nil)
			if len(stored.links) == 0 || !reflect.DeepEqual(stored, walked) {
				t.Errorf("%s job %d: counted from the stored routes %v %v, from the steps %v %v", topo, j.ID, stored.links, stored.routes, walked.links, walked.routes)
			}
		}
		s.Close()
	}
}

// TestLoadsAfterRestart: a start counts every running job's link loads
// while it reads the jobs back (the first read only sums them), and they
// equal the loads counted from the tables' steps, with failed links and
// re-routed jobs too.
func TestLoadsAfterRestart(t *testing.T) {
	dir := t.TempDir()
	s, _ := openTest(t, dir, "torus:6x6x4", nil)
	for _, m := range []int{6, 9, 14, 20} {
		if _, err := s.Submit("test", client.JobRequest{Nodes: m, Transit: 4}); err != nil {
			t.Fatal(err)
		}
	}
	loads := s.LinkLoads()
	busiest := 0
	for l, n := range loads {
		if n > loads[busiest] {
			busiest = l
		}
	}
	res, err := s.ChangeFailure(context.Background(), "test", client.FailureChange{Link: s.g.LinkName(busiest)})
	if err != nil || len(res.Jobs) == 0 {
		t.Fatalf("failing the busiest link: %v %+v", err, res)
	}
	if _, err := s.Release("test", 1); err != nil {
		t.Fatal(err)
	}
	before := s.LinkLoads()
	s.Close()

	s, _ = openTest(t, dir, "", nil)
	defer s.Close()
	if len(s.jobs) != 3 {
		t.Fatalf("%d running jobs after the restart, want 3", len(s.jobs))
	}
	want := make([]int, s.g.NumLinks())
	for id, j := range s.jobs {
		if e, ok := s.links[id]; !ok || e.tb != j.Table {
			t.Errorf("job %d: link loads not counted by the start", id)
		}
		walkTableLinks(s.g, mustTable(j), func(l int) { want[l]++ })
	}
	if got := s.LinkLoads(); !slices.Equal(got, want) || !slices.Equal(got, before) {
		t.Error("link loads after the restart differ from those counted from the tables' steps or from those before it")
	}
}

// TestStoredLinkCountsRandomRoutes: on tori with rings of 2 to 6 nodes
// (parallel rings too), random routes whose runs wrap around rings and
// run longer than a ring are counted from their stored form exactly as
// walk counts their steps.
func TestStoredLinkCountsRandomRoutes(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, spec := range []string{"torus:5x4x3", "torus:4x4x2x2", "torus:6x3:rings=2,1", "torus:2x2x2"} {
		g, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		nd := len(g.Dims())
		tf := &routing.TableJSON{Dims: g.Dims()}
		for v := range g.NumNodes() {
			tf.Active = append(tf.Active, g.Coord(v))
		}
		for range 400 {
			var dirs []string
			for range r.IntN(6) {
				d := r.IntN(2 * nd)
				for range 1 + r.IntN(9) {
					dirs = append(dirs, routing.Dir(d).String())
				}
			}
			tf.Routes = append(tf.Routes, routing.RouteJSON{Src: tf.Active[r.IntN(len(tf.Active))], Dst: tf.Active[r.IntN(len(tf.Active))], Dirs: dirs})
		}
		routes, err := routing.EncodeStoredRoutes(tf)
		if err != nil {
			t.Fatal(err)
		}
		ld := newLinkDirs(g)
		if !ld.rings {
			t.Errorf("%s: not seen as a plain torus", spec)
		}
		var lc linkCounter
		stored, walked := lc.count(ld, tf, routes), lc.count(ld, tf, nil)
		if len(walked.links) == 0 || !reflect.DeepEqual(stored, walked) {
			t.Errorf("%s (rings %v): counted from the stored routes %v %v, from the steps %v %v", spec, ld.rings, stored.links, stored.routes, walked.links, walked.routes)
		}
		if again := lc.count(ld, tf, routes); !reflect.DeepEqual(again, stored) {
			t.Errorf("%s: a second count differs (scratch not cleared)", spec)
		}
	}
}

// TestFabricAnswerBytesUnchanged: GET /api/fabric's answer assembled from
// pieces is byte for byte the encoding of Service.Fabric, on tori with
// jobs and failed links and nodes (indented below 1 MiB, compact above),
// switched fabrics with levels and groups, and after every change. GET
// /api/fabric?compact=1's answer, on a plain grid, gives the same fabric
// by the rule of client.FabricGrid (gridView), and on any other fabric is
// GET /api/fabric's.
func TestFabricAnswerBytesUnchanged(t *testing.T) {
	for _, tc := range []struct {
		topo     string
		jobs     []int
		links    []string
		nodes    []string
		grid     bool
		switched bool
	}{
		{"torus:4x4x4x2", []int{5, 9}, []string{"0.0.0.0+X", "1.2.3.1+Z"}, []string{"3.3.3.1"}, true, false},
		{"torus:8x8x8", []int{12, 30, 7}, []string{"2.2.2+Y"}, []string{"7.0.0"}, true, false},
		{"torus:16x16x16", []int{40, 100}, []string{"0.0.0+X", "5.5.5+Z"}, []string{"9.9.9"}, true, false},
		{"torus:12", []int{3}, []string{"0+X"}, nil, true, false},
		{"torus:3x2x2", []int{4}, []string{"1.1.0+Y", "2.0.1+Z"}, []string{"0.1.1"}, true, false},
		{"mesh:3x4", nil, []string{"1.2+X"}, []string{"2.3"}, true, false},
		{"torus:4x3x2x2x3x2:mesh=W,U", []int{6}, []string{"1.1.0.0.2.1+W", "3.2.1.1.0.0+U"}, []string{"2.2.1.1.2.1"}, true, false},
		{"torus:4x4:rings=2,1", nil, []string{"0.0+X#1"}, nil, false, false},
		{"torus:3x3:endpoints=1", nil, nil, []string{"1.1/0"}, false, false},
		{"fattree:k=4,n=3", nil, nil, nil, false, true},
		{"dragonfly:a=4,p=2,h=2", nil, nil, nil, false, true},
	} {
		s, _ := openTest(t, t.TempDir(), tc.topo, nil)
		check := func(when string) {
			t.Helper()
			want, err := client.Encode(s.Fabric())
			if err != nil {
				t.Fatal(err)
			}
			if got := s.FabricJSON(); !bytes.Equal(got, want) {
				i := 0
				for i < min(len(got), len(want)) && got[i] == want[i] {
					i++
				}
				t.Fatalf("%s %s: %d bytes differ from client.Encode(Fabric())'s %d at byte %d: %q vs %q", tc.topo, when,
					len(got), len(want), i, got[max(0, i-40):min(len(got), i+40)], want[max(0, i-40):min(len(want), i+40)])
			}
			compact := s.FabricGridJSON()
			if !tc.grid {
				if !bytes.Equal(compact, want) {
					t.Fatalf("%s %s: the compact answer of a fabric that is no plain grid is not GET /api/fabric's", tc.topo, when)
				}
				return
			}
			var fg client.FabricGrid
			if err := json.Unmarshal(compact, &fg); err != nil || !fg.Grid {
				t.Fatalf("%s %s: compact answer %.200s: %v", tc.topo, when, compact, err)
			}
			got, view := gridView(fg), s.Fabric()
			for i := range max(len(got.Nodes), len(view.Nodes)) {
				if i >= len(got.Nodes) || i >= len(view.Nodes) || !reflect.DeepEqual(got.Nodes[i], view.Nodes[i]) {
					t.Fatalf("%s %s: the plain grid's compact answer gives %d nodes, want %d; node %d differs", tc.topo, when, len(got.Nodes), len(view.Nodes), i)
				}
			}
			for i := range max(len(got.Links), len(view.Links)) {
				if i >= len(got.Links) || i >= len(view.Links) || got.Links[i] != view.Links[i] {
					t.Fatalf("%s %s: the plain grid's compact answer gives %d links, want %d; link %d differs", tc.topo, when, len(got.Links), len(view.Links), i)
				}
			}
			if !reflect.DeepEqual(got, view) {
				t.Fatalf("%s %s: the plain grid's compact answer gives another fabric: %+v, want %+v", tc.topo, when, got, view)
			}
		}
		check("new")
		for _, m := range tc.jobs {
			if _, err := s.Submit("test", client.JobRequest{Nodes: m, Transit: 2}); err != nil {
				t.Fatal(err)
			}
			check("after a placement")
		}
		if tc.switched {
			// Switched fabrics: a failed link and a failed switch.
			s.mu.RLock()
			tc.links = []string{s.g.LinkName(s.g.NumLinks() / 2)}
			tc.nodes = []string{s.g.NodeName(s.g.Switches()[0])}
			s.mu.RUnlock()
		}
		for _, l := range tc.links {
			if _, err := s.ChangeFailure(context.Background(), "test", client.FailureChange{Link: l}); err != nil {
				t.Fatal(err)
			}
			check("after a link failure")
		}
		for _, n := range tc.nodes {
			if _, err := s.ChangeFailure(context.Background(), "test", client.FailureChange{Node: n}); err != nil {
				t.Fatal(err)
			}
			check("after a node failure")
		}
		if len(tc.jobs) > 0 {
			if _, err := s.Release("test", 1); err != nil {
				t.Fatal(err)
			}
			check("after a release")
		}
		if len(tc.links) > 0 {
			if _, err := s.ChangeFailure(context.Background(), "test", client.FailureChange{Link: tc.links[0], Repair: true}); err != nil {
				t.Fatal(err)
			}
			check("after a repair")
		}
		if tc.topo == "torus:16x16x16" && len(s.FabricJSON()) <= client.IndentLimit {
			t.Errorf("%s: %d bytes, want an answer above the indent limit", tc.topo, len(s.FabricJSON()))
		}
		s.Close()
	}
}

// gridView builds the fabric a plain grid's compact answer stands for, by
// the rule client.FabricGrid states.
func gridView(fg client.FabricGrid) client.FabricView {
	v := client.FabricView{Spec: fg.Spec, Dims: fg.Dims, FailedLinks: fg.FailedLinks, FailedNodes: fg.FailedNodes,
		Rules: fg.Rules, Jobs: fg.Jobs, NoJobs: fg.NoJobs, Nodes: []client.NodeView{}, Links: []client.LinkView{}}
	c := make([]int, len(fg.Dims))
	for id, job := range fg.NodeJobs {
		v.Nodes = append(v.Nodes, client.NodeView{ID: id, Name: topology.CoordString(c), Kind: "endpoint", Coord: slices.Clone(c),
			Job: job, Failed: slices.Contains(fg.FailedNodeIDs, id)})
		stride := 1
		for i, d := range fg.Dims {
			if fg.Wrap[i] || c[i]+1 < d {
				b := id + stride
				if c[i]+1 == d {
					b = id - (d-1)*stride
				}
				l := len(v.Links)
				v.Links = append(v.Links, client.LinkView{ID: l, Name: topology.CoordString(c) + "+" + topology.DimName(i), A: id, B: b, Dim: i,
					Failed: slices.Contains(fg.FailedLinkIDs, l)})
			}
			stride *= d
		}
		for i := range c {
			if c[i]++; c[i] < fg.Dims[i] {
				break
			}
			c[i] = 0
		}
	}
	return v
}

// TestLoadAnswerFollowsChanges: GET /api/fabric/load's answer is the
// encoding of the current link loads and EFI, shared while neither
// changes, and renewed by a placement, a failure and a routed multicast
// group; GET /api/jobs's is the encoding of the running jobs.
func TestLoadAnswerFollowsChanges(t *testing.T) {
	s, _ := openTest(t, t.TempDir(), "torus:4x4x4", nil)
	defer s.Close()
	var last []byte
	check := func(when string, renewed bool) {
		t.Helper()
		want, err := client.Encode(map[string]any{"routes": s.LinkLoads(), "efi": s.mc.linkEFI()})
		if err != nil {
			t.Fatal(err)
		}
		got, again := s.LoadsJSON(), s.LoadsJSON()
		if !bytes.Equal(got, want) || &got[0] != &again[0] {
			t.Fatalf("%s: the load answer differs from the encoding of the loads, or is encoded twice", when)
		}
		jobs, _ := s.Jobs(false)
		if want, err := client.Encode(jobs); err != nil || !bytes.Equal(s.JobsJSON(), want) {
			t.Fatalf("%s: the jobs answer differs from the encoding of the running jobs (%v)", when, err)
		}
		if last != nil && (&got[0] != &last[0]) != renewed {
			t.Fatalf("%s: answer renewed %v, want %v", when, &got[0] != &last[0], renewed)
		}
		last = got
	}
	check("new", true)
	check("unchanged", false)
	if _, err := s.Submit("test", client.JobRequest{Nodes: 10, Transit: 2}); err != nil {
		t.Fatal(err)
	}
	check("after a placement", true)
	for _, m := range []string{"0.0.0", "2.2.2", "3.1.0"} {
		if _, err := s.mc.join(context.Background(), "test", client.McastRequest{Group: "g", Member: m, MemberCount: 3}); err != nil {
			t.Fatal(err)
		}
	}
	check("after a group was routed", true)
	if _, err := s.ChangeFailure(context.Background(), "test", client.FailureChange{Link: "3.3.3+Z"}); err != nil {
		t.Fatal(err)
	}
	check("after a failure", true)
	if _, err := s.Release("test", 1); err != nil {
		t.Fatal(err)
	}
	check("after a release", true)
}

// TestLoadsJSONMatchesEncoder: the hand-written encoding of the load
// answer is byte for byte encodeJSON's, with empty, short, negative and
// long lists, indented and (past the indent limit) compact.
func TestLoadsJSONMatchesEncoder(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 1))
	long := func(n, span int) []int {
		l := make([]int, n)
		for i := range l {
			l[i] = r.IntN(span)
		}
		return l
	}
	for _, tc := range []struct{ routes, efi []int }{
		{[]int{}, []int{}},
		{nil, nil},
		{[]int{0}, []int{}},
		{[]int{3, 0, 12}, []int{1, -1, 0}},
		{long(98304, 3000), long(98304, 3)},
		{long(150000, 1<<30), long(150000, 1<<20)},
		// Compact, exactly the indent limit and one byte past it.
		{append(long(524276, 10), 10), []int{}},
		{long(524278, 10), []int{}},
	} {
		want, err := client.Encode(map[string]any{"routes": tc.routes, "efi": tc.efi})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendLoadsJSON(nil, tc.routes, tc.efi); !bytes.Equal(got, want) {
			t.Errorf("%d and %d entries: %q…, want %q…", len(tc.routes), len(tc.efi), got[:min(len(got), 60)], want[:min(len(want), 60)])
		}
	}
}

// TestLinksFromBuildMatchCount: what a new table puts on the links, taken
// from the loads its build counted, equals what is counted from its
// stored routes, on tori with mesh dimensions, failed links and transit
// nodes.
func TestLinksFromBuildMatchCount(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	tables := 0
	for _, spec := range []string{"torus:6x5x4", "torus:4x4x2x3:mesh=W", "torus:5x2x3:mesh=Y"} {
		base, err := topology.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		for rep := range 6 {
			var failed []int
			for range rep % 3 {
				failed = append(failed, rng.IntN(base.NumLinks()))
			}
			g, err := base.WithFaults(failed, nil)
			if err != nil {
				t.Fatal(err)
			}
			r, err := AngaraRouting("angara*")(g)
			if err != nil {
				t.Fatal(err)
			}
			// The whole torus as the set, some of it as transit nodes.
			perm := rng.Perm(g.NumNodes())
			m := 2 + rng.IntN(g.NumNodes()-2)
			active, transit := perm[:m], perm[m:]
			tf, routes, _, links, err := newTable(context.Background(), r, active, transit)
			if err != nil {
				continue // not reachable
			}
			var lc linkCounter
			counted := lc.count(newLinkDirs(g), tf, routes)
			if links == nil || !reflect.DeepEqual(*links, counted) {
				t.Fatalf("%s, %v failed, %d active: from the build %+v, counted %+v", spec, failed, m, links, counted)
			}
			tables++
		}
	}
	if tables < 8 {
		t.Fatalf("%d tables compared: the test tests too little", tables)
	}
}

// TestJobsJSONMatchesEncode: GET /api/jobs's answer assembled from each
// job's JSON is byte for byte client.Encode of the list, for lists of 0
// to many jobs below and above client.IndentLimit (indented, then
// compact), and after jobs are replaced, added and released (only the
// replaced records are encoded again).
func TestJobsJSONMatchesEncode(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 43))
	job := func(id, names int) *client.JobRecord {
		j := &client.JobRecord{ID: id, Name: fmt.Sprintf("job <%d> & co", id), State: client.JobRunning, Nodes: names, Routing: client.RouteRerouted,
			Affected: []string{"link.fail 0.1.2+X"}, Selection: &client.Selection{}}
		for k := range names {
			j.Active = append(j.Active, fmt.Sprintf("%d.%d.%d", r.IntN(16), k%16, k/16))
		}
		return j
	}
	for _, c := range []struct{ jobs, names int }{{0, 0}, {1, 3}, {5, 40}, {60, 1500}, {60, 2000}, {3, 40000}} {
		var recs []*client.JobRecord
		for i := range c.jobs {
			recs = append(recs, job(i+1, c.names))
		}
		var pieces map[int]*jobPiece
		for round := range 4 {
			var got []byte
			var err error
			before := maps.Clone(pieces)
			if got, pieces, err = appendJobsJSON(nil, recs, pieces); err != nil {
				t.Fatal(err)
			}
			list := make([]*client.JobRecord, len(recs))
			for i, j := range recs {
				c := *j
				list[i] = &c
			}
			want, err := client.Encode(list)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%d jobs of %d nodes, round %d (%d bytes, indented %v): the assembled answer differs from client.Encode", c.jobs, c.names, round, len(want), want[0] == '[' && len(want) > 1 && want[1] == '\n')
			}
			for _, j := range recs {
				if p := before[j.ID]; p != nil && p.rec == j && pieces[j.ID] != p {
					t.Fatalf("job %d's record is unchanged but was encoded again", j.ID)
				}
			}
			// The next version: a job replaced, one released, one added.
			if len(recs) > 0 {
				k := r.IntN(len(recs))
				c := *recs[k]
				c.Routing, c.Problem = client.RouteBroken, "no legal route from 0.0.0 to 1.1.1 inside the job's nodes"
				recs[k] = &c
				recs = slices.Delete(recs, 0, 1)
			}
			recs = append(recs, job(100+round, c.names))
		}
	}
}
