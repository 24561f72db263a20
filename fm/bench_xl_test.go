package fm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"

	"github.com/chromedp/chromedp"
)

// The service at the size of the largest tori built (issue 43 item 4):
// Sequoia's torus:16x16x16x12x2 (98 304 nodes, the default) or, with
// ICN_FM_TOPO, any other torus such as Fugaku's Tofu-D,
// torus:24x23x24x2x3x2:mesh=W,U (158 976 nodes); ICN_FM_RULES sets the
// routing rule (default angara*). The fill places jobs
// of 64–16 384 nodes drawn from a fixed seed (64·256^(u^2.3), transit
// allowance m/4) until 60 % of the nodes are busy. ICN_FM_STATE=DIR
// keeps the filled store in DIR/<fabric>/ (with the fill's log of every
// request, fill.jsonl) and the next run reuses it.

// xlDefaultTopo is the fabric of the XL benchmarks without ICN_FM_TOPO.
const xlDefaultTopo = "torus:16x16x16x12x2"

// xlTopo returns the XL benchmarks' fabric.
func xlTopo() string {
	if t := os.Getenv("ICN_FM_TOPO"); t != "" {
		return t
	}
	return xlDefaultTopo
}

// xlRules returns the routing rule of the XL benchmarks: ICN_FM_RULES,
// by default angara* (the service's).
func xlRules() string {
	if r := os.Getenv("ICN_FM_RULES"); r != "" {
		return r
	}
	return "angara*"
}

// openXL opens a service in dir on spec (a new store) or on the store
// there (spec ""), with the XL benchmarks' rule.
func openXL(b *testing.B, dir, spec string) (*Service, string) {
	b.Helper()
	s, tok, err := Open(Config{DBPath: filepath.Join(dir, "fm.db"), Topo: spec, NewRouting: AngaraRouting(xlRules()), MulticastTimeout: 5 * time.Second, FailureBudget: DefaultFailureBudget})
	if err != nil {
		b.Fatal(err)
	}
	return s, tok
}

// xlBudget returns the placement budget of the fill: ICN_FM_BUDGET (a
// duration), by default the service's (alloc.DefaultBudget).
func xlBudget() (time.Duration, error) {
	v := os.Getenv("ICN_FM_BUDGET")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("ICN_FM_BUDGET=%q: want a positive duration such as 30s", v)
	}
	return d, nil
}

// xlKeep returns the directory that keeps spec's filled store under
// ICN_FM_STATE (one per fabric and rule), or "" without it.
func xlKeep(spec string) string {
	keep := os.Getenv("ICN_FM_STATE")
	if keep == "" {
		return ""
	}
	name := spec
	if r := xlRules(); r != "angara*" {
		name += "_" + r // a store of another rule
	}
	return filepath.Join(keep, strings.NewReplacer(":", "_", ",", "_", "=", "-", "/", "_", "*", "star").Replace(name))
}

// xlRequest is one request of the fill and what became of it.
type xlRequest struct {
	Nodes    int     `json:"nodes"`
	Transit  int     `json:"transit"`
	Seconds  float64 `json:"seconds"` // wall time of the request
	Placed   bool    `json:"placed"`
	Error    string  `json:"error,omitempty"`
	Cut      string  `json:"cut,omitempty"`
	Complete int     `json:"complete_criteria"`
	Examined int     `json:"examined"`
	Busy     int     `json:"busy"` // busy nodes after the request
}

// fillXL opens a service on spec in dir filled to 60 % (see above), or a
// copy of the store kept under ICN_FM_STATE, and returns it with the
// fill's requests (read back from the kept log when the fill was kept).
// A fill that keeps its store also keeps a checkpoint after every 5
// placements (fill.part.db and fill.part.jsonl), from which the next run
// goes on if this one is stopped.
func fillXL(b *testing.B, dir, spec string) (*Service, string, []xlRequest) {
	db := filepath.Join(dir, "fm.db")
	keep := xlKeep(spec)
	if keep != "" {
		if err := copyFile(filepath.Join(keep, "fm.db"), db); err == nil {
			s, tok, err := Open(Config{DBPath: db, NewRouting: AngaraRouting(xlRules()), MulticastTimeout: 5 * time.Second, RotateToken: true, FailureBudget: DefaultFailureBudget})
			if err != nil {
				b.Fatal(err)
			}
			return s, tok, readFillLog(b, filepath.Join(keep, "fill.jsonl"))
		} else if !errors.Is(err, os.ErrNotExist) {
			b.Fatal(err)
		}
		if err := os.MkdirAll(keep, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	budget, err := xlBudget()
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{DBPath: db, Topo: spec, NewRouting: AngaraRouting(xlRules()), MulticastTimeout: 5 * time.Second, PlacementBudget: budget, RotateToken: true, FailureBudget: DefaultFailureBudget}
	s, tok, reqs := resumeFill(b, keep, cfg)
	if s == nil {
		if s, tok, err = Open(cfg); err != nil {
			b.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(1, 28))
	placed, refused := 0, 0
	for _, q := range reqs { // the requests of the checkpoint
		r.Float64()
		if q.Placed {
			placed, refused = placed+1, 0
		} else {
			refused++
		}
	}
	start := time.Now()
	// A refused request can take the whole placement budget: the fill
	// stops after 10 in a row.
	for refused < 10 && float64(s.state.Busy()) < 0.6*float64(s.state.N()) {
		m := int(64 * math.Pow(256, math.Pow(r.Float64(), 2.3)))
		q := xlRequest{Nodes: m, Transit: m / 4}
		t0 := time.Now()
		j, err := s.Submit("bench", client.JobRequest{Nodes: m, Transit: m / 4})
		q.Seconds = time.Since(t0).Seconds()
		q.Busy = s.state.Busy()
		if err != nil {
			q.Error = err.Error()
			refused++
		} else {
			q.Placed = true
			placed, refused = placed+1, 0
			if sel := j.Selection; sel != nil {
				q.Cut, q.Complete, q.Examined = sel.Cut, sel.Complete, sel.Examined
			}
		}
		reqs = append(reqs, q)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fmt.Fprintf(os.Stderr, "ServiceTargetsXL: request %d: %d+%d nodes %s in %.1f s (cut %q, complete %d); %d jobs, %d of %d nodes busy (%.1f %%), heap %d MB, %.0f s\n",
			len(reqs), m, m/4, map[bool]string{true: "placed", false: "refused"}[q.Placed], q.Seconds, q.Cut, q.Complete,
			placed, q.Busy, s.state.N(), 100*float64(q.Busy)/float64(s.state.N()), ms.HeapInuse>>20, time.Since(start).Seconds())
		if !q.Placed {
			fmt.Fprintf(os.Stderr, "ServiceTargetsXL:   %s\n", q.Error)
		}
		if keep != "" && q.Placed && placed%5 == 0 {
			checkpointFill(b, keep, s, reqs)
		}
	}
	b.ReportMetric(time.Since(start).Seconds(), "fill-s")
	if keep != "" {
		s.Close()
		writeFillLog(b, filepath.Join(keep, "fill.jsonl"), reqs)
		if err := copyFile(db, filepath.Join(keep, "fm.db")); err != nil {
			b.Fatal(err)
		}
		os.Remove(filepath.Join(keep, "fill.part.db"))
		os.Remove(filepath.Join(keep, "fill.part.jsonl"))
		s, tok = openXL(b, dir, "")
	}
	return s, tok, reqs
}

// checkpointFill keeps the fill so far in keep: its requests, then a
// checked copy of the store.
func checkpointFill(b *testing.B, keep string, s *Service, reqs []xlRequest) {
	writeFillLog(b, filepath.Join(keep, "fill.part.jsonl"), reqs)
	if _, err := store.BackupFile(func(w io.Writer) (int64, error) { return s.Backup(w, nil) }, filepath.Join(keep, "fill.part.db")); err != nil {
		b.Fatal(err)
	}
}

// resumeFill opens the checkpoint of a fill kept in keep on cfg.DBPath
// and returns it with its requests, or nil when there is none or it does
// not hold as many jobs as its requests placed (stopped between the
// two writes).
func resumeFill(b *testing.B, keep string, cfg Config) (*Service, string, []xlRequest) {
	if keep == "" {
		return nil, "", nil
	}
	if err := copyFile(filepath.Join(keep, "fill.part.db"), cfg.DBPath); err != nil {
		return nil, "", nil
	}
	reqs := readFillLog(b, filepath.Join(keep, "fill.part.jsonl"))
	cfg.Topo = ""
	s, tok, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	placed := 0
	for _, q := range reqs {
		if q.Placed {
			placed++
		}
	}
	s.mu.RLock()
	held := len(s.jobs)
	s.mu.RUnlock()
	if placed != held {
		fmt.Fprintf(os.Stderr, "ServiceTargetsXL: the checkpoint holds %d jobs, its log %d placements: filling anew\n", held, placed)
		s.Close()
		os.Remove(cfg.DBPath)
		return nil, "", nil
	}
	fmt.Fprintf(os.Stderr, "ServiceTargetsXL: going on from the checkpoint: %d requests, %d jobs\n", len(reqs), placed)
	return s, tok, reqs
}

// writeFillLog writes the fill's requests to path, one JSON object a
// line (through a temporary file).
func writeFillLog(b *testing.B, path string, reqs []xlRequest) {
	var buf bytes.Buffer
	for _, q := range reqs {
		line, _ := json.Marshal(q)
		buf.Write(append(line, '\n'))
	}
	if err := os.WriteFile(path+".tmp", buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		b.Fatal(err)
	}
}

// readFillLog reads the fill's requests that fillXL kept.
func readFillLog(b *testing.B, path string) []xlRequest {
	f, err := os.Open(path)
	if err != nil {
		b.Logf("no fill log: %v", err)
		return nil
	}
	defer f.Close()
	var reqs []xlRequest
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var q xlRequest
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			b.Fatalf("%s: %v", path, err)
		}
		reqs = append(reqs, q)
	}
	return reqs
}

// copyFile copies the file src to dst.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// reportFill reports the fill's placements: their wall times, how many
// the budget cut, and how many were complete for fewer than 2 criteria
// (all sizes, and m ≤ 4 096).
func reportFill(b *testing.B, s *Service, reqs []xlRequest) {
	var took []time.Duration
	refused, cut, before2, before2Small := 0, 0, 0, 0
	complete := map[int]int{}
	for _, q := range reqs {
		if !q.Placed {
			refused++
			continue
		}
		took = append(took, time.Duration(q.Seconds*float64(time.Second)))
		if q.Cut != "" {
			cut++
		}
		complete[q.Complete]++
		if q.Complete < 2 {
			before2++
			if q.Nodes <= 4096 {
				before2Small++
			}
		}
	}
	s.mu.RLock()
	b.ReportMetric(float64(len(s.jobs)), "jobs")
	b.ReportMetric(100*float64(s.state.Busy())/float64(s.state.N()), "busy-%")
	s.mu.RUnlock()
	b.ReportMetric(float64(refused), "refused")
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	b.ReportMetric(took[len(took)/2].Seconds(), "place-p50-s")
	b.ReportMetric(took[(len(took)*99)/100].Seconds(), "place-p99-s")
	b.ReportMetric(took[len(took)-1].Seconds(), "place-max-s")
	b.ReportMetric(float64(cut), "cut")
	b.ReportMetric(float64(before2), "complete<2")
	b.ReportMetric(float64(before2Small), "complete<2-m<=4096")
	for c := 0; c <= 4; c++ {
		if complete[c] > 0 {
			b.ReportMetric(float64(complete[c]), fmt.Sprintf("complete-%d-jobs", c))
		}
	}
}

// cpuTime returns the CPU time the process has used (all its threads):
// on a shared host the wall time of a step depends on the other load,
// its CPU time much less.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitTables waits until no job waits for its table (tables built
// after the answer: fm/tables.go) and returns how long that took.
func waitTables(s *Service) time.Duration {
	start, said := time.Now(), time.Now()
	for {
		pending, nodes := 0, 0
		s.mu.RLock()
		for _, j := range s.jobs {
			if j.Routing == client.RoutePending {
				pending++
				nodes += len(j.Active)
			}
		}
		s.mu.RUnlock()
		if pending == 0 {
			return time.Since(start)
		}
		if time.Since(said) >= 10*time.Second {
			fmt.Fprintf(os.Stderr, "ServiceTargetsXL: %d jobs (%d active nodes) wait for their tables, %.0f s\n", pending, nodes, time.Since(start).Seconds())
			said = time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitReads waits until the background has computed the reads of the
// current version of the jobs (warmReads), at most 10 s.
func waitReads(s *Service) {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		s.mu.RLock()
		ver := s.jobsVer
		s.mu.RUnlock()
		if s.reads.warmed.Load() >= ver {
			return
		}
	}
}

// maxRSS returns the process's peak resident size in bytes.
func maxRSS() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Maxrss << 10 // kilobytes on Linux
}

// BenchmarkServiceTargetsXL measures the service on the fabric of
// xlTopo filled to 60 % (fillXL): the fill's placements (wall time
// p50/p99/max, how many cut, complete criteria), the first GET of the
// metrics, link loads, fabric and all jobs, 10 link failures on links
// that jobs' routes use and 3 node failures of nodes jobs hold (each
// repaired after; the time until the affected job is re-routed or
// broken) with GET /api/jobs, /api/fabric/load and /api/mcast every 20 ms
// meanwhile, the store's size and a restart to the first answer over
// HTTP. Runs only with ICN_FM_LARGE=1; progress on stderr.
func BenchmarkServiceTargetsXL(b *testing.B) {
	if os.Getenv("ICN_FM_LARGE") == "" {
		b.Skip("set ICN_FM_LARGE=1")
	}
	spec := xlTopo()
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		s, tok, reqs := fillXL(b, dir, spec)
		reportFill(b, s, reqs)
		b.ReportMetric(waitTables(s).Seconds(), "pending-tables-s")
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/1e6, "heap-MB")
		srv := httptest.NewServer(api.New(s, api.Options{}))
		firstReads(b, srv.URL, tok, "")
		_, fabric := getTimed(b, srv.URL, tok, "/api/fabric")
		b.ReportMetric(float64(len(fabric))/1e6, "fabric-answer-MB")

		// Failures of links jobs use and of nodes jobs hold, drawn from a
		// fixed seed.
		r := rand.New(rand.NewPCG(3, 43))
		var used []int
		for l, n := range s.LinkLoads() {
			if n > 0 {
				used = append(used, l)
			}
		}
		var changes []client.FailureChange
		for k := 0; k < 10 && len(used) > 0; k++ {
			changes = append(changes, client.FailureChange{Link: s.g.LinkName(used[r.IntN(len(used))])})
		}
		s.mu.RLock() // (the table builder may commit meanwhile)
		ids := sortedIDs(s.jobs)
		for k := 0; k < 3 && len(ids) > 0; k++ {
			j := s.jobs[ids[r.IntN(len(ids))]]
			changes = append(changes, client.FailureChange{Node: j.Active[r.IntN(len(j.Active))]})
		}
		s.mu.RUnlock()
		var linkTook, nodeTook, lat []time.Duration
		var deferredTook time.Duration // the longest wait for the tables a failure deferred
		rerouted, broken, pending := 0, 0, 0
		for _, ch := range changes {
			waitTables(s) // each failure on a quiet service: tables built,
			waitReads(s)  // the reads of the last change computed
			stop := make(chan struct{})
			got := make(chan map[string][]time.Duration)
			go func() { got <- pollGETs(b, srv.URL, tok, stop) }()
			t0 := time.Now()
			res, err := s.ChangeFailure(context.Background(), "bench", ch)
			took := time.Since(t0)
			close(stop)
			for _, l := range <-got {
				lat = append(lat, l...)
			}
			if err != nil {
				b.Fatal(err)
			}
			for _, e := range res.Jobs {
				switch e.Result {
				case client.RouteRerouted:
					rerouted++
				case client.RouteBroken:
					broken++
				case client.RoutePending:
					pending++
				}
			}
			if ch.Link != "" {
				linkTook = append(linkTook, took)
			} else {
				nodeTook = append(nodeTook, took)
			}
			var hit []string
			s.mu.RLock()
			for _, e := range res.Jobs {
				if j := s.jobs[e.ID]; j != nil {
					hit = append(hit, fmt.Sprintf("job %d of %d+%d nodes %s", e.ID, len(j.Active), len(j.TransitNodes), e.Result))
				}
			}
			s.mu.RUnlock()
			deferred := waitTables(s)
			deferredTook = max(deferredTook, deferred)
			fmt.Fprintf(os.Stderr, "ServiceTargetsXL: failure of %s%s: %.2f s, %v; deferred tables built %.2f s later\n", ch.Link, ch.Node, took.Seconds(), hit, deferred.Seconds())
			ch.Repair = true
			if _, err := s.ChangeFailure(context.Background(), "bench", ch); err != nil {
				b.Fatal(err)
			}
		}
		srv.Close()
		for _, c := range []struct {
			name string
			took []time.Duration
		}{{"link", linkTook}, {"node", nodeTook}} {
			if len(c.took) > 0 {
				slices.Sort(c.took)
				b.ReportMetric(c.took[len(c.took)/2].Seconds(), c.name+"-failure-p50-s")
				b.ReportMetric(c.took[len(c.took)-1].Seconds(), c.name+"-failure-max-s")
			}
		}
		b.ReportMetric(float64(rerouted), "rerouted")
		b.ReportMetric(float64(broken), "broken")
		b.ReportMetric(float64(pending), "pending")
		b.ReportMetric(deferredTook.Seconds(), "deferred-tables-max-s")
		percentiles(b, lat, "get-during-failure-")

		s.Close()
		if fi, err := os.Stat(filepath.Join(dir, "fm.db")); err == nil {
			b.ReportMetric(float64(fi.Size())/1e6, "db-MB")
		}
		// A restart: open (whole-file check, jobs and tables read back,
		// routing built) to the first answer over HTTP.
		t0, c0 := time.Now(), cpuTime()
		s, _ = openXL(b, dir, "")
		srv = httptest.NewServer(api.New(s, api.Options{}))
		getTimed(b, srv.URL, tok, "/api/jobs")
		b.ReportMetric(time.Since(t0).Seconds(), "restart-s")
		b.ReportMetric((cpuTime() - c0).Seconds(), "restart-cpu-s")
		srv.Close()
		s.Close()
		b.ReportMetric(float64(maxRSS())/1e6, "maxrss-MB")
		b.StartTimer()
	}
}

// BenchmarkServiceStartXL: a new service on the fabric of xlTopo (the
// store created, the fabric built, nothing placed): the time to the first
// answer over HTTP, the first GET /api/fabric (its size plain and gzip,
// and GET /api/fabric?compact=1's, the web page's form), the heap after
// the start, and a restart of the store to the first answer. Runs only
// with ICN_FM_LARGE=1.
func BenchmarkServiceStartXL(b *testing.B) {
	if os.Getenv("ICN_FM_LARGE") == "" {
		b.Skip("set ICN_FM_LARGE=1")
	}
	spec := xlTopo()
	for b.Loop() {
		dir := b.TempDir()
		t0, c0 := time.Now(), cpuTime()
		s, tok := openXL(b, dir, spec)
		srv := httptest.NewServer(api.New(s, api.Options{}))
		getTimed(b, srv.URL, tok, "/api/jobs")
		b.ReportMetric(time.Since(t0).Seconds(), "start-s")
		b.ReportMetric((cpuTime() - c0).Seconds(), "start-cpu-s")
		b.StopTimer()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/1e6, "heap-MB")
		for _, r := range []struct{ name, path, accept string }{
			{"fabric", "/api/fabric", ""}, {"fabric-gzip", "/api/fabric", "gzip"}, {"fabric-compact", "/api/fabric?compact=1", ""},
			{"load", "/api/fabric/load", ""}, {"load-gzip", "/api/fabric/load", "gzip"},
		} {
			req, _ := http.NewRequest("GET", srv.URL+r.path, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			if r.accept != "" {
				req.Header.Set("Accept-Encoding", r.accept)
			}
			t1 := time.Now()
			resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
			if err != nil {
				b.Fatal(err)
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			b.ReportMetric(time.Since(t1).Seconds()*1e3, r.name+"-ms")
			b.ReportMetric(float64(n)/1e6, r.name+"-MB")
		}
		srv.Close()
		s.Close()
		t0, c0 = time.Now(), cpuTime()
		s, _ = openXL(b, dir, "")
		srv = httptest.NewServer(api.New(s, api.Options{}))
		getTimed(b, srv.URL, tok, "/api/jobs")
		b.ReportMetric(time.Since(t0).Seconds(), "restart-s")
		b.ReportMetric((cpuTime() - c0).Seconds(), "restart-cpu-s")
		srv.Close()
		s.Close()
		b.StartTimer()
	}
}

// BenchmarkWebPageXL: the web page in a headless Chromium on the fabric
// of xlTopo, empty and (with ICN_FM_STATE=DIR holding the filled store
// of ServiceTargetsXL) filled: the time from the page's start to its
// first canvas drawing (the fabric, jobs and loads fetched, parsed, laid
// out and drawn: firstDrawnAt), one drawing (lastDrawMs), and the size of
// what a refresh fetches. Runs only with ICN_FM_LARGE=1.
func BenchmarkWebPageXL(b *testing.B) {
	if os.Getenv("ICN_FM_LARGE") == "" {
		b.Skip("set ICN_FM_LARGE=1")
	}
	browser := needChromium(b)
	spec := xlTopo()
	b.Run("empty", func(b *testing.B) {
		s, tok := openXL(b, b.TempDir(), spec)
		defer s.Close()
		firstDrawing(b, browser, s, tok)
	})
	if keep := xlKeep(spec); keep != "" {
		if _, err := os.Stat(filepath.Join(keep, "fm.db")); err == nil {
			b.Run("filled", func(b *testing.B) {
				s, tok, _ := fillXL(b, b.TempDir(), spec)
				defer s.Close()
				waitTables(s)
				firstDrawing(b, browser, s, tok)
			})
		}
	}
}

// firstDrawing loads the page on s in a new browser each iteration and
// reports the page's first drawing (BenchmarkWebPageXL).
func firstDrawing(b *testing.B, browser string, s *Service, tok string) {
	var fetched int64
	h := api.New(s, api.Options{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &countingWriter{ResponseWriter: w}
		h.ServeHTTP(cw, r)
		atomic.AddInt64(&fetched, cw.n)
	}))
	defer srv.Close()
	var first, draw []float64
	for b.Loop() {
		b.StopTimer()
		ctx, cancel := newBrowser(b, browser, chromedp.WindowSize(1400, 1000))
		// Started on a blank page, so that the browser's own start is
		// not timed.
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			cancel()
			b.Fatalf("browser: %v", err)
		}
		atomic.StoreInt64(&fetched, 0)
		tctx, cancelT := context.WithTimeout(ctx, 5*time.Minute)
		b.StartTimer()
		err := chromedp.Do(tctx, chromedp.Navigate(srv.URL+"/#token="+tok), chromedp.WaitVisible(`#fabric-canvas[data-drawn]`))
		b.StopTimer()
		if err != nil {
			cancelT()
			cancel()
			b.Fatalf("browser: the page drew no canvas: %v", err)
		}
		ms, err := chromedp.Run(tctx, chromedp.Evaluate[[]float64](`[firstDrawnAt, lastDrawMs, +document.querySelector('#fabric-canvas').dataset.drawn]`))
		if err != nil {
			b.Fatal(err)
		}
		if int(ms[2]) != s.g.NumNodes() {
			b.Errorf("canvas drew %d of %d nodes", int(ms[2]), s.g.NumNodes())
		}
		first, draw = append(first, ms[0]), append(draw, ms[1])
		b.ReportMetric(float64(atomic.LoadInt64(&fetched))/1e6, "fetched-MB")
		cancelT()
		cancel()
		b.StartTimer()
	}
	slices.Sort(first)
	slices.Sort(draw)
	b.ReportMetric(first[len(first)/2], "first-draw-ms")
	b.ReportMetric(first[len(first)-1], "first-draw-max-ms")
	b.ReportMetric(draw[len(draw)/2], "draw-ms")
}

// countingWriter counts the bytes of an answer.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

// BenchmarkRestartXL restarts the filled store ServiceTargetsXL keeps
// under ICN_FM_STATE, on a copy: the first start (a store of an earlier
// schema is migrated then, its link loads counted from the stored routes
// and stored: first-start-s), then b.N restarts to the first answer over
// HTTP (GET /api/jobs): restart-s and restart-cpu-s are the medians.
// Runs only with ICN_FM_LARGE=1.
func BenchmarkRestartXL(b *testing.B) {
	if os.Getenv("ICN_FM_LARGE") == "" {
		b.Skip("set ICN_FM_LARGE=1")
	}
	keep := xlKeep(xlTopo())
	if keep == "" {
		b.Skip("set ICN_FM_STATE to where ServiceTargetsXL kept its filled store")
	}
	dir := b.TempDir()
	path := filepath.Join(dir, "fm.db")
	if err := copyFile(filepath.Join(keep, "fm.db"), path); err != nil {
		b.Fatal(err)
	}
	t0, c0 := time.Now(), cpuTime()
	s, tok, err := Open(Config{DBPath: path, NewRouting: AngaraRouting(xlRules()), RotateToken: true, FailureBudget: DefaultFailureBudget})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(time.Since(t0).Seconds(), "first-start-s")
	b.ReportMetric((cpuTime() - c0).Seconds(), "first-start-cpu-s")
	b.ReportMetric(float64(s.countedAtStart), "first-start-counted-jobs")
	s.Close()
	var took, cpu []time.Duration
	counted := 0
	for b.Loop() {
		t0, c0 := time.Now(), cpuTime()
		s, _ := openXL(b, dir, "")
		srv := httptest.NewServer(api.New(s, api.Options{}))
		getTimed(b, srv.URL, tok, "/api/jobs")
		took, cpu = append(took, time.Since(t0)), append(cpu, cpuTime()-c0)
		counted += s.countedAtStart
		srv.Close()
		s.Close()
	}
	slices.Sort(took)
	slices.Sort(cpu)
	b.ReportMetric(took[len(took)/2].Seconds(), "restart-s")
	b.ReportMetric(cpu[len(cpu)/2].Seconds(), "restart-cpu-s")
	b.ReportMetric(float64(counted), "restart-counted-jobs")
	if fi, err := os.Stat(path); err == nil {
		b.ReportMetric(float64(fi.Size())/1e6, "db-MB")
	}
}
