package fm

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"

	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

func percentiles(b *testing.B, lat []time.Duration, prefix string) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, prefix+"p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, prefix+"p99-ms")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds())/1000, prefix+"max-ms")
}

// BenchmarkPlacement50Clients: 50 HTTP clients submit and release jobs at
// once; placement latency p50/p99, and the answers that were 5xx (the
// service's own failures: none expected) and 409 per run of 50, also with a
// budget of 100 ms, far less than the last client waits. The 32 768-node
// size runs only with ICN_FM_LARGE=1 (minutes per placement with today's
// node selection).
func BenchmarkPlacement50Clients(b *testing.B) {
	for _, c := range []struct {
		spec   string
		budget time.Duration
	}{{"torus:8x8x16", 0}, {"torus:8x8x16", 100 * time.Millisecond}, {"torus:32x32x32", 0}} {
		name := c.spec
		if c.budget > 0 {
			name += "/budget=" + c.budget.String()
		}
		b.Run(name, func(b *testing.B) {
			if c.spec == "torus:32x32x32" && os.Getenv("ICN_FM_LARGE") == "" {
				b.Skip("set ICN_FM_LARGE=1")
			}
			s, tok, err := Open(Config{DBPath: filepath.Join(b.TempDir(), "fm.db"), Topo: c.spec, NewRouting: AngaraRouting("angara*"), PlacementBudget: c.budget})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			srv := httptest.NewServer(api.New(s, api.Options{}))
			defer srv.Close()
			var mu sync.Mutex
			var lat []time.Duration
			failed, refused := 0, 0 // 5xx and 409 answers
			b.ResetTimer()
			for b.Loop() {
				var wg sync.WaitGroup
				for w := 0; w < 50; w++ {
					wg.Add(1)
					go func(w int) {
						defer wg.Done()
						c := &apiClient{t: b, url: srv.URL, token: tok}
						t0 := time.Now()
						code, j := c.do("POST", "/api/jobs", map[string]any{"nodes": []int{2, 4, 8, 16}[w%4], "transit": 2})
						d := time.Since(t0)
						mu.Lock()
						lat = append(lat, d)
						switch {
						case code >= 500:
							failed++
						case code == http.StatusConflict:
							refused++
						}
						mu.Unlock()
						if code == 201 {
							c.do("DELETE", fmt.Sprintf("/api/jobs/%d", int(j["id"].(float64))), nil)
						}
					}(w)
				}
				wg.Wait()
			}
			percentiles(b, lat, "")
			b.ReportMetric(float64(failed)/float64(b.N), "5xx/run")
			b.ReportMetric(float64(refused)/float64(b.N), "409/run")
		})
	}
}

// slowRouting makes every table computation take d: a long placement.
type slowRouting struct {
	Routing
	d time.Duration
}

func (r *slowRouting) Routes(ctx context.Context, active, transit []int) (*routing.TableJSON, client.TableStats, error) {
	time.Sleep(r.d)
	return r.Routing.Routes(ctx, active, transit)
}

// BenchmarkGETDuringPlacement: GET /api/jobs latency while a placement
// that takes 2 s runs (target: < 50 ms).
func BenchmarkGETDuringPlacement(b *testing.B) {
	factory := func(g *topology.Graph) (Routing, error) {
		rt, err := AngaraRouting("angara*")(g)
		if err != nil {
			return nil, err
		}
		return &slowRouting{Routing: rt, d: 2 * time.Second}, nil
	}
	s, tok, err := Open(Config{DBPath: filepath.Join(b.TempDir(), "fm.db"), Topo: "torus:8x8x8", NewRouting: factory})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(api.New(s, api.Options{}))
	defer srv.Close()
	var lat []time.Duration
	for b.Loop() {
		done := make(chan struct{})
		go func() { s.Submit("bench", client.JobRequest{Nodes: 8, Transit: 2}); close(done) }()
		time.Sleep(100 * time.Millisecond)
		for running := true; running; {
			select {
			case <-done:
				running = false
			default:
				req, _ := http.NewRequest("GET", srv.URL+"/api/jobs", nil)
				req.Header.Set("Authorization", "Bearer "+tok)
				t0 := time.Now()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				lat = append(lat, time.Since(t0))
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	percentiles(b, lat, "get-")
}

// BenchmarkFailureReroute20Jobs: time from a link-failure report to its
// commit with every affected job of 20 running ones re-routed (the
// iteration fails a link and repairs it; both are timed).
func BenchmarkFailureReroute20Jobs(b *testing.B) {
	s, _ := openTest(b, b.TempDir(), "torus:8x8x8", nil)
	defer s.Close()
	var links []string
	for i := 0; i < 20; i++ {
		j, err := s.Submit("bench", client.JobRequest{Nodes: 8, Transit: 4})
		if err != nil {
			b.Fatal(err)
		}
		r := mustTable(j).Routes[0]
		parts := make([]string, len(r.Src))
		for k, c := range r.Src {
			parts[k] = fmt.Sprint(c)
		}
		links = append(links, strings.Join(parts, ".")+r.Dirs[0])
	}
	rerouted := 0
	i := 0
	for b.Loop() {
		l := links[i%len(links)]
		res, err := s.ChangeFailure(context.Background(), "bench", client.FailureChange{Link: l})
		if err != nil {
			b.Fatal(err)
		}
		rerouted += len(res.Jobs)
		if _, err := s.ChangeFailure(context.Background(), "bench", client.FailureChange{Link: l, Repair: true}); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(rerouted)/float64(i), "jobs-rerouted/failure")
}

// BenchmarkRestart100kAudit: opening a database with 100 000 audit
// entries (the whole-file check decodes every one).
func BenchmarkRestart100kAudit(b *testing.B) {
	dir := b.TempDir()
	s, _ := openTest(b, dir, "torus:8x8x8", nil)
	for k := 0; k < 100000; k += 5000 {
		_, err := s.store.Update(context.Background(), "bench", func(tx *store.Tx) error {
			for n := 0; n < 5000; n++ {
				if err := tx.Log("link.fail", "0.0.0+X", map[string]any{"affected_jobs": []int{}}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	st, _ := os.Stat(filepath.Join(dir, "fm.db"))
	b.ResetTimer()
	for b.Loop() {
		s, _, err := Open(Config{DBPath: filepath.Join(dir, "fm.db"), NewRouting: AngaraRouting("angara*")})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
	b.ReportMetric(float64(st.Size())/(1<<20), "MB")
}
