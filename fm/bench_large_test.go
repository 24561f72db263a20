package fm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"
	"github.com/icn-hpc/icn/routing"
)

// BenchmarkPlace1024Large: one 1 024-node job with transit 0 posted over
// HTTP to a new torus:32x32x32 service (issue 15 item 3); the client reads
// the answer without decoding it; it reports the answer's size and the
// database's after the placement. Runs only with ICN_FM_LARGE=1.
func BenchmarkPlace1024Large(b *testing.B) {
	if os.Getenv("ICN_FM_LARGE") == "" {
		b.Skip("set ICN_FM_LARGE=1")
	}
	s, tok := openTest(b, b.TempDir(), "torus:32x32x32", nil)
	defer s.Close()
	srv := httptest.NewServer(api.New(s, api.Options{}))
	defer srv.Close()
	b.ReportAllocs()
	for b.Loop() {
		id, n := postJobRaw(b, srv.URL, tok, `{"nodes":1024,"transit":0}`)
		b.ReportMetric(float64(n)/1e6, "answer-MB")
		b.StopTimer()
		if fi, err := os.Stat(s.store.Name()); err == nil {
			b.ReportMetric(float64(fi.Size())/1e6, "db-MB")
		}
		req, _ := http.NewRequest("DELETE", fmt.Sprintf("%s/api/jobs/%d", srv.URL, id), nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("DELETE: %v %v", err, resp)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		b.StartTimer()
	}
}

// postJobRaw posts a job and returns its id and the answer's size.
func postJobRaw(b *testing.B, url, tok, body string) (int, int64) {
	req, _ := http.NewRequest("POST", url+"/api/jobs", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	head, _ := br.Peek(64)
	var id int
	i := strings.Index(string(head), `"id":`)
	if resp.StatusCode != 201 || i < 0 {
		b.Fatalf("POST /api/jobs: %d %q", resp.StatusCode, head)
	}
	fmt.Sscanf(strings.TrimSpace(string(head[i+5:])), "%d", &id)
	n, _ := io.Copy(io.Discard, br)
	return id, n
}

// BenchmarkFailureLarge: on torus:32x32x32 with 40 running jobs of 64 to
// 512 nodes (transit m/4), placed by the service from a fixed sequence,
// each iteration fails a link used by some job and repairs it; it
// reports the failures' median and slowest time (re-routing and commit
// included), the database size, the time of the first and the next read
// of the fabric's metrics, the link loads and all jobs, and the time a
// restart of the database takes. Runs only with ICN_FM_LARGE=1.
func BenchmarkFailureLarge(b *testing.B) {
	if os.Getenv("ICN_FM_LARGE") == "" {
		b.Skip("set ICN_FM_LARGE=1")
	}
	dir := b.TempDir()
	s, _ := openTest(b, dir, "torus:32x32x32", nil)
	defer func() { s.Close() }()
	sizes := []int{64, 128, 256, 512, 96, 192, 384}
	for i := 0; i < 40; i++ {
		m := sizes[i%len(sizes)]
		if _, err := s.Submit("bench", client.JobRequest{Nodes: m, Transit: m / 4}); err != nil {
			b.Fatal(err)
		}
	}
	loads := s.LinkLoads()
	var used []int
	for l, n := range loads {
		if n > 0 {
			used = append(used, l)
		}
	}
	var took []time.Duration
	k := 0
	for b.Loop() {
		link := s.g.LinkName(used[(k*7919)%len(used)])
		k++
		start := time.Now()
		if _, err := s.ChangeFailure(context.Background(), "bench", client.FailureChange{Link: link}); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		b.StopTimer()
		if _, err := s.ChangeFailure(context.Background(), "bench", client.FailureChange{Link: link, Repair: true}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	// Reads of the state left: the first call of a version computes,
	// the next ones share its answer.
	for _, r := range []struct {
		name string
		read func()
	}{
		{"metrics", func() { s.Metrics() }},
		{"load", func() { s.LinkLoads() }},
		{"jobs-all", func() {
			if _, err := s.Jobs(true); err != nil {
				b.Fatal(err)
			}
		}},
		{"load-after-release", func() {
			// One job released: the sum is made again from the
			// jobs' kept loads.
			if _, err := s.Release("bench", sortedIDs(s.jobs)[0]); err != nil {
				b.Fatal(err)
			}
			s.LinkLoads()
		}},
	} {
		for _, call := range []string{"first", "next"} {
			start := time.Now()
			r.read()
			b.ReportMetric(time.Since(start).Seconds()*1e3, r.name+"-"+call+"-ms")
		}
	}
	slices.Sort(took)
	b.ReportMetric(took[len(took)/2].Seconds(), "failure-p50-s")
	b.ReportMetric(took[len(took)-1].Seconds(), "failure-max-s")
	if fi, err := os.Stat(s.store.Name()); err == nil {
		b.ReportMetric(float64(fi.Size())/1e6, "db-MB")
	}
	// A restart of that database: the whole-file check, the jobs and
	// their tables read back, the fabric's routing built.
	s.Close()
	start := time.Now()
	s, _ = openTest(b, dir, "", nil)
	b.ReportMetric(time.Since(start).Seconds(), "restart-s")
}

// BenchmarkGroupJoinLarge: on a new torus:32x32x32 service, the first
// join of a multicast group of 64 members (it sets up the multicast
// router) and the time until all 64 have joined and the group is routed.
// Runs only with ICN_FM_LARGE=1.
func BenchmarkGroupJoinLarge(b *testing.B) {
	if os.Getenv("ICN_FM_LARGE") == "" {
		b.Skip("set ICN_FM_LARGE=1")
	}
	k := 0
	for b.Loop() {
		b.StopTimer()
		s, _ := openTest(b, b.TempDir(), "torus:32x32x32", nil)
		b.StartTimer()
		start := time.Now()
		var first time.Duration
		for i := 0; i < 64; i++ {
			member := fmt.Sprintf("%d.%d.%d", (i+k)%32, (i/32)*5, (i*7)%32)
			if _, err := s.mc.join(context.Background(), "bench", client.McastRequest{Group: "g", Member: member, MemberCount: 64}); err != nil {
				b.Fatal(err)
			}
			if i == 0 {
				first = time.Since(start)
			}
		}
		b.ReportMetric(first.Seconds(), "first-join-s")
		b.ReportMetric(time.Since(start).Seconds(), "group-routed-s")
		b.StopTimer()
		s.Close()
		b.StartTimer()
		k++
	}
}

// BenchmarkGETDuringLargePlacement: on torus:32x32x32 with 8 running
// jobs (8-jobs) and, with ICN_FM_STATE=DIR, on the filled state of
// ServiceTargets kept there (filled: 197 jobs, 58.5 % busy), GET
// /api/jobs, /api/fabric/load and /api/fabric latency (every 20 ms) while
// a 512-node placement with 128 transit nodes runs (node selection and
// its table on all cores but one) and is released. Runs only with
// ICN_FM_LARGE=1.
func BenchmarkGETDuringLargePlacement(b *testing.B) {
	if os.Getenv("ICN_FM_LARGE") == "" {
		b.Skip("set ICN_FM_LARGE=1")
	}
	b.Run("8-jobs", func(b *testing.B) {
		s, tok := openTest(b, b.TempDir(), "torus:32x32x32", nil)
		defer s.Close()
		for i := 0; i < 8; i++ {
			if _, err := s.Submit("bench", client.JobRequest{Nodes: 256, Transit: 64}); err != nil {
				b.Fatal(err)
			}
		}
		getsDuringPlacement(b, s, tok)
	})
	if keep := os.Getenv("ICN_FM_STATE"); keep != "" {
		b.Run("filled", func(b *testing.B) {
			s, tok := fillTargets(b, b.TempDir(), keep)
			defer s.Close()
			getsDuringPlacement(b, s, tok)
		})
	}
}

// getsDuringPlacement times GETs over HTTP while 512 + 128 placements run
// (BenchmarkGETDuringLargePlacement).
func getsDuringPlacement(b *testing.B, s *Service, tok string) {
	s.LinkLoads()
	srv := httptest.NewServer(api.New(s, api.Options{}))
	defer srv.Close()
	var lat []time.Duration
	byPath := map[string][]time.Duration{}
	for b.Loop() {
		done := make(chan error, 1)
		go func() {
			j, err := s.Submit("bench", client.JobRequest{Nodes: 512, Transit: 128})
			if err == nil {
				_, err = s.Release("bench", j.ID)
			}
			done <- err
		}()
		for k := 0; ; k++ {
			select {
			case err := <-done:
				if err != nil {
					b.Fatal(err)
				}
			default:
				path := []string{"/api/jobs", "/api/fabric/load", "/api/fabric"}[k%3]
				req, _ := http.NewRequest("GET", srv.URL+path, nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				t0 := time.Now()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				lat = append(lat, time.Since(t0))
				byPath[path] = append(byPath[path], time.Since(t0))
				time.Sleep(20 * time.Millisecond)
				continue
			}
			break
		}
	}
	percentiles(b, lat, "get-")
	for path, l := range byPath {
		slices.Sort(l)
		b.ReportMetric(float64(l[len(l)*99/100].Microseconds())/1000, strings.TrimPrefix(path, "/api/")+"-p99-ms")
	}
}

// BenchmarkServiceTargets builds the state of the fabric manager's
// targets from a fixed seed: torus:32x32x32 filled to 60 % by up to 197
// jobs of 8–1 024 nodes (8·128^(u^2.3), mean about 100 nodes, transit
// m/4), and 100 multicast groups of 8 members. It then times 10 link
// failures, each on a link used by jobs and by the most multicast trees
// (each repaired after), with GET requests over HTTP every 20 ms
// meanwhile; the first read of the metrics, link loads, fabric and all
// jobs; and a restart; and it reports the database size. Progress goes
// to stderr. Runs only with ICN_FM_LARGE=1; with ICN_FM_STATE=DIR the
// filled store (before the groups) is kept in DIR and reused by the next
// run, which then skips the fill.
func BenchmarkServiceTargets(b *testing.B) {
	if os.Getenv("ICN_FM_LARGE") == "" {
		b.Skip("set ICN_FM_LARGE=1")
	}
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		s, tok := fillTargets(b, dir, os.Getenv("ICN_FM_STATE"))
		r := rand.New(rand.NewPCG(2, 28))
		start := time.Now()
		var joins []time.Duration
		for gi := 0; gi < 100; gi++ {
			for k := 0; k < 8; k++ {
				member := fmt.Sprintf("%d.%d.%d", r.IntN(32), r.IntN(32), r.IntN(32))
				t0 := time.Now()
				_, err := s.mc.join(context.Background(), "bench", client.McastRequest{Group: fmt.Sprintf("g%03d", gi), Member: member, MemberCount: 8})
				if err != nil && !errors.Is(err, client.ErrConflict) { // a member drawn twice
					b.Fatal(err)
				}
				joins = append(joins, time.Since(t0))
			}
		}
		b.ReportMetric(joins[0].Seconds(), "first-join-s")
		b.ReportMetric(time.Since(start).Seconds(), "groups-s")
		slices.Sort(joins)
		b.ReportMetric(joins[len(joins)-1].Seconds(), "join-max-s")
		fmt.Fprintf(os.Stderr, "ServiceTargets: 100 groups routed in %.1f s\n", time.Since(start).Seconds())

		// Links crossing jobs, by the number of trees through them.
		jobLoads := s.LinkLoads()
		efi := s.mc.linkEFI()
		var cand []int
		for l, n := range jobLoads {
			if n > 0 && efi[l] > 0 {
				cand = append(cand, l)
			}
		}
		slices.SortStableFunc(cand, func(a, c int) int { return efi[c] - efi[a] })
		srv := httptest.NewServer(api.New(s, api.Options{}))
		var took []time.Duration
		var lat []time.Duration
		byPath := map[string][]time.Duration{}
		jobsHit, treesHit := 0, 0
		for k := 0; k < 10 && k < len(cand); k++ {
			link := s.g.LinkName(cand[k])
			treesHit += efi[cand[k]]
			stop := make(chan struct{})
			got := make(chan map[string][]time.Duration)
			go func() { got <- pollGETs(b, srv.URL, tok, stop) }()
			t0 := time.Now()
			res, err := s.ChangeFailure(context.Background(), "bench", client.FailureChange{Link: link})
			if err != nil {
				b.Fatal(err)
			}
			took = append(took, time.Since(t0))
			close(stop)
			for path, l := range <-got {
				lat = append(lat, l...)
				byPath[path] = append(byPath[path], l...)
			}
			for _, e := range res.Jobs {
				if e.Result != "" {
					jobsHit++
				}
			}
			if _, err := s.ChangeFailure(context.Background(), "bench", client.FailureChange{Link: link, Repair: true}); err != nil {
				b.Fatal(err)
			}
		}
		srv.Close()
		slices.Sort(took)
		b.ReportMetric(took[len(took)/2].Seconds(), "failure-p50-s")
		b.ReportMetric(took[len(took)-1].Seconds(), "failure-max-s")
		b.ReportMetric(float64(treesHit)/float64(len(took)), "trees-per-failure")
		b.ReportMetric(float64(jobsHit)/float64(len(took)), "jobs-rerouted-per-failure")
		percentiles(b, lat, "get-during-failure-")
		for path, l := range byPath {
			slices.Sort(l)
			b.ReportMetric(float64(l[len(l)*99/100].Microseconds())/1000, strings.ReplaceAll(strings.TrimPrefix(path, "/api/"), "/", "-")+"-p99-ms")
		}
		fmt.Fprintf(os.Stderr, "ServiceTargets: failures p50 %.2f s\n", took[len(took)/2].Seconds())
		for _, rd := range []struct {
			name string
			read func()
		}{
			{"metrics", func() { s.Metrics() }},
			{"load", func() { s.LinkLoads() }},
			{"fabric", func() { s.FabricJSON() }},
			{"jobs-all", func() { s.Jobs(true) }},
		} {
			t0 := time.Now()
			rd.read()
			b.ReportMetric(time.Since(t0).Seconds()*1e3, rd.name+"-ms")
		}
		s.Close()
		if fi, err := os.Stat(filepath.Join(dir, "fm.db")); err == nil {
			b.ReportMetric(float64(fi.Size())/1e6, "db-MB")
		}
		t0 := time.Now()
		s, _ = openTest(b, dir, "", nil)
		b.ReportMetric(time.Since(t0).Seconds(), "restart-s")
		s.Close()
		b.StartTimer()
	}
}

// fillTargets opens a torus:32x32x32 service in dir filled to 60 % by
// up to 197 jobs from a fixed seed (see BenchmarkServiceTargets), or, if
// keep holds such a store already, a copy of it.
func fillTargets(b *testing.B, dir, keep string) (*Service, string) {
	db := filepath.Join(dir, "fm.db")
	if keep != "" {
		if data, err := os.ReadFile(filepath.Join(keep, "fm.db")); err == nil {
			if err := os.WriteFile(db, data, 0o600); err != nil {
				b.Fatal(err)
			}
			s, tok, err := Open(Config{DBPath: db, NewRouting: AngaraRouting("angara*"), MulticastTimeout: 5 * time.Second, RotateToken: true})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(len(s.jobs)), "jobs")
			b.ReportMetric(100*float64(s.state.Busy())/float64(s.state.N()), "busy-%")
			return s, tok
		}
	}
	s, tok := openTest(b, dir, "torus:32x32x32", nil)
	r := rand.New(rand.NewPCG(1, 28))
	start := time.Now()
	jobs, refused := 0, 0
	// A refused request can take the whole placement budget: the fill
	// stops after 10 in a row.
	for jobs < 197 && refused < 10 && float64(s.state.Busy()) < 0.6*float64(s.state.N()) {
		m := int(8 * math.Pow(128, math.Pow(r.Float64(), 2.3)))
		if _, err := s.Submit("bench", client.JobRequest{Nodes: m, Transit: m / 4}); err != nil {
			refused++
			continue
		}
		jobs, refused = jobs+1, 0
		if jobs%10 == 0 {
			fmt.Fprintf(os.Stderr, "ServiceTargets: %d jobs placed, %d of %d nodes busy, %.0f s\n", jobs, s.state.Busy(), s.state.N(), time.Since(start).Seconds())
		}
	}
	b.ReportMetric(float64(jobs), "jobs")
	b.ReportMetric(100*float64(s.state.Busy())/float64(s.state.N()), "busy-%")
	b.ReportMetric(time.Since(start).Seconds(), "fill-s")
	if keep != "" {
		s.Close()
		data, err := os.ReadFile(db)
		if err != nil {
			b.Fatal(err)
		}
		os.MkdirAll(keep, 0o700)
		if err := os.WriteFile(filepath.Join(keep, "fm.db"), data, 0o600); err != nil {
			b.Fatal(err)
		}
		s, tok = openTest(b, dir, "", nil)
	}
	return s, tok
}

// pollGETs sends GET /api/jobs, /api/fabric/load and /api/mcast in turn
// every 20 ms until stop is closed and returns their latencies.
func pollGETs(b *testing.B, url, tok string, stop <-chan struct{}) map[string][]time.Duration {
	lat := map[string][]time.Duration{}
	for k := 0; ; k++ {
		select {
		case <-stop:
			return lat
		default:
		}
		path := []string{"/api/jobs", "/api/fabric/load", "/api/mcast"}[k%3]
		req, _ := http.NewRequest("GET", url+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		t0 := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Error(err)
			return lat
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Errorf("GET %s: %d", path, resp.StatusCode)
		}
		lat[path] = append(lat[path], time.Since(t0))
		time.Sleep(20 * time.Millisecond)
	}
}

// getTimed sends one GET and returns its time to the last byte and the
// answer.
func getTimed(b *testing.B, url, tok, path string) (time.Duration, []byte) {
	req, _ := http.NewRequest("GET", url+path, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(t0)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
	}
	return took, data
}

// firstReads times the first GET of each large read over HTTP and
// reports them as PREFIX-metrics-ms and so on; PREFIX-metrics-current is
// 1 when the metrics answered are the current fabric's (an answer
// without the field, from a service that computes them on the read,
// counts as current).
func firstReads(b *testing.B, url, tok, prefix string) {
	for _, r := range []struct{ name, path string }{
		{"metrics", "/api/fabric/metrics"}, {"load", "/api/fabric/load"},
		{"fabric", "/api/fabric"}, {"jobs-all", "/api/jobs?all=1"},
	} {
		took, data := getTimed(b, url, tok, r.path)
		b.ReportMetric(took.Seconds()*1e3, prefix+r.name+"-ms")
		if r.name == "metrics" {
			current := 1.0
			if bytes.Contains(data, []byte(`"current": false`)) {
				current = 0
			}
			b.ReportMetric(current, prefix+"metrics-current")
		}
	}
}

// metricsCurrentAfter polls GET /api/fabric/metrics every 10 ms until it
// answers the current fabric's figures and returns the time since start;
// it gives up after 5 minutes.
func metricsCurrentAfter(b *testing.B, url, tok string, start time.Time) time.Duration {
	for {
		_, data := getTimed(b, url, tok, "/api/fabric/metrics")
		if !bytes.Contains(data, []byte(`"current": false`)) {
			return time.Since(start)
		}
		if time.Since(start) > 5*time.Minute {
			b.Fatalf("the metrics answered after 5 minutes are not the current fabric's: %s", data)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkReadsAfterRestartLarge: on the state of ServiceTargets
// (torus:32x32x32, 197 jobs; ICN_FM_STATE=DIR reuses the store that
// ServiceTargets kept there, else the fill takes minutes), the link
// carrying the most routes fails; then the first GET of the metrics, the
// link loads, the fabric and all jobs over HTTP after the failure, after
// a restart of the service (and the restart's time to a served
// service), and after the link's repair; and how long after each change
// the metrics answered are the current fabric's. Runs only with
// ICN_FM_LARGE=1.
func BenchmarkReadsAfterRestartLarge(b *testing.B) {
	if os.Getenv("ICN_FM_LARGE") == "" {
		b.Skip("set ICN_FM_LARGE=1")
	}
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		s, tok := fillTargets(b, dir, os.Getenv("ICN_FM_STATE"))
		loads := s.LinkLoads()
		link := 0
		for l, n := range loads {
			if n > loads[link] {
				link = l
			}
		}
		name := s.g.LinkName(link)
		srv := httptest.NewServer(api.New(s, api.Options{}))
		t0 := time.Now()
		if _, err := s.ChangeFailure(context.Background(), "bench", client.FailureChange{Link: name}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(t0).Seconds(), "failure-s")
		t0 = time.Now()
		firstReads(b, srv.URL, tok, "after-failure-")
		b.ReportMetric(metricsCurrentAfter(b, srv.URL, tok, t0).Seconds()*1e3, "after-failure-metrics-current-after-ms")
		srv.Close()
		s.Close()

		t0 = time.Now()
		s, _ = openTest(b, dir, "", nil)
		srv = httptest.NewServer(api.New(s, api.Options{}))
		b.ReportMetric(time.Since(t0).Seconds(), "restart-s")
		t0 = time.Now()
		firstReads(b, srv.URL, tok, "after-restart-")
		b.ReportMetric(metricsCurrentAfter(b, srv.URL, tok, t0).Seconds()*1e3, "after-restart-metrics-current-after-ms")

		if _, err := s.ChangeFailure(context.Background(), "bench", client.FailureChange{Link: name, Repair: true}); err != nil {
			b.Fatal(err)
		}
		t0 = time.Now()
		firstReads(b, srv.URL, tok, "after-repair-")
		b.ReportMetric(metricsCurrentAfter(b, srv.URL, tok, t0).Seconds()*1e3, "after-repair-metrics-current-after-ms")
		srv.Close()
		s.Close()
		b.StartTimer()
	}
}

// BenchmarkRestartLarge: restarts of the ServiceTargets state (as
// BenchmarkReadsAfterRestartLarge: ICN_FM_STATE=DIR reuses it) with the
// busiest link failed; each iteration opens the database (whole-file
// check, jobs and tables read back, routing built) and closes it. It
// reports the first link-load read after each start. Runs only with
// ICN_FM_LARGE=1.
func BenchmarkRestartLarge(b *testing.B) {
	if os.Getenv("ICN_FM_LARGE") == "" {
		b.Skip("set ICN_FM_LARGE=1")
	}
	dir := b.TempDir()
	s, _ := fillTargets(b, dir, os.Getenv("ICN_FM_STATE"))
	loads := s.LinkLoads()
	link := 0
	for l, n := range loads {
		if n > loads[link] {
			link = l
		}
	}
	if _, err := s.ChangeFailure(context.Background(), "bench", client.FailureChange{Link: s.g.LinkName(link)}); err != nil {
		b.Fatal(err)
	}
	s.Close()
	var load time.Duration
	for b.Loop() {
		s, _ := openTest(b, dir, "", nil)
		b.StopTimer()
		t0 := time.Now()
		s.LinkLoads()
		load += time.Since(t0)
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(load.Seconds()*1e3/float64(b.N), "first-load-ms")
}

// BenchmarkCountLinkLoadsLarge: every running job's link loads on the
// ServiceTargets state (ICN_FM_STATE=DIR reuses it), counted on one core
// from the stored routes as a start counts them, against walking the
// decoded tables' steps; it reports the routes and steps. Runs only with
// ICN_FM_LARGE=1.
func BenchmarkCountLinkLoadsLarge(b *testing.B) {
	if os.Getenv("ICN_FM_LARGE") == "" {
		b.Skip("set ICN_FM_LARGE=1")
	}
	s, _ := fillTargets(b, b.TempDir(), os.Getenv("ICN_FM_STATE"))
	defer s.Close()
	type table struct {
		tb     *routing.TableJSON
		routes []byte
	}
	var tables []table
	routes, steps := 0, 0
	_, err := s.store.View(context.Background(), func(tx *store.Tx) error {
		return tx.JobsStored(func(j *client.JobRecord, stored []byte, _ *store.Loads) error {
			if j.State != client.JobRunning || stored == nil {
				return nil
			}
			tables = append(tables, table{s.jobs[j.ID].Table, slices.Clone(stored)})
			return nil
		})
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, t := range tables {
		routes += len(t.tb.Routes)
		for _, r := range t.tb.Routes {
			steps += len(r.Dirs)
		}
	}
	ld := newLinkDirs(s.g)
	for _, c := range []struct {
		name   string
		stored bool
	}{{"stored-routes", true}, {"decoded-steps", false}} {
		b.Run(c.name, func(b *testing.B) {
			var lc linkCounter
			for b.Loop() {
				for _, t := range tables {
					r := t.routes
					if !c.stored {
						r = nil
					}
					lc.count(ld, t.tb, r)
				}
			}
			b.ReportMetric(float64(routes), "routes")
			b.ReportMetric(float64(steps), "steps")
		})
	}
}
