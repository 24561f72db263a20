package fm

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"
)

// BenchmarkAllocationHTTP measures allocation requests over loopback HTTP
// on a 1 024-node torus held at about 50% occupancy: each iteration
// submits a job and releases the oldest one. It reports requests per
// second and the p50/p99 latency of the submit requests.
func BenchmarkAllocationHTTP(b *testing.B) {
	s, tok := openTest(b, b.TempDir(), "torus:8x8x4x4", nil)
	defer s.Close()
	srv := httptest.NewServer(api.New(s, api.Options{}))
	defer srv.Close()
	c := &apiClient{t: b, url: srv.URL, token: tok}
	var live []int
	sizes := []int{4, 8, 16, 2, 32, 8}
	for i := 0; s.state.Busy() < s.state.N()/2; i++ {
		code, j := c.do("POST", "/api/jobs", map[string]any{"nodes": sizes[i%len(sizes)], "transit": 4})
		if code == 201 {
			live = append(live, int(j["id"].(float64)))
		}
		if i > 1000 {
			b.Fatal("could not fill the machine")
		}
	}
	var lat []time.Duration
	b.ResetTimer()
	start := time.Now()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		code, j := c.do("POST", "/api/jobs", map[string]any{"nodes": sizes[i%len(sizes)], "transit": 4})
		lat = append(lat, time.Since(t0))
		if code == 201 {
			live = append(live, int(j["id"].(float64)))
		}
		if len(live) > 0 {
			c.do("DELETE", fmt.Sprintf("/api/jobs/%d", live[0]), nil)
			live = live[1:]
		}
	}
	el := time.Since(start)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(len(lat))/el.Seconds(), "alloc/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkRestart10kJobs measures opening a database that holds 10 000
// stored jobs with their routing tables: the running ones a 1 024-node
// torus holds at about 75% occupancy (placed for real) and released ones
// (stored directly, each with a real table), i.e. the service's restart
// time.
func BenchmarkRestart10kJobs(b *testing.B) {
	dir := b.TempDir()
	s, _ := openTest(b, dir, "torus:8x8x4x4", nil)
	var sample *client.JobRecord
	for i := 0; s.state.Busy() < s.state.N()*3/4 && i < 2000; i++ {
		j, err := s.Submit("bench", client.JobRequest{Nodes: []int{4, 8, 16, 2, 32}[i%5], Transit: 4})
		if err == nil && sample == nil {
			sample = j
		}
	}
	running, _ := s.Jobs(false)
	now := time.Now().UTC()
	for k := 0; k < 10000-len(running); {
		_, err := s.store.Update(context.Background(), "bench", func(tx *store.Tx) error {
			for n := 0; n < 500 && k < 10000-len(running); n, k = n+1, k+1 {
				id, err := tx.NextJobID()
				if err != nil {
					return err
				}
				j := *sample
				j.ID, j.State, j.Released = id, "released", &now
				if err := tx.PutJob(&j, nil); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	all, _ := s.Jobs(true)
	s.Close()
	b.ResetTimer()
	for b.Loop() {
		s, _, err := Open(Config{DBPath: filepath.Join(dir, "fm.db"), NewRouting: AngaraRouting("angara*")})
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
	b.ReportMetric(float64(len(all)), "jobs")
	b.ReportMetric(float64(len(running)), "running")
}

// BenchmarkMetricsAfterFailure: on a new torus:16x16x16 service (and
// torus:32x32x32 with ICN_FM_LARGE=1), each iteration fails a link and
// times the first GET /api/fabric/metrics after it and how long until
// the metrics answered are the new fabric's (polled every 10 ms), then
// repairs the link.
func BenchmarkMetricsAfterFailure(b *testing.B) {
	specs := []string{"torus:16x16x16"}
	if os.Getenv("ICN_FM_LARGE") != "" {
		specs = append(specs, "torus:32x32x32")
	}
	for _, spec := range specs {
		b.Run(spec, func(b *testing.B) {
			s, tok := openTest(b, b.TempDir(), spec, nil)
			defer s.Close()
			srv := httptest.NewServer(api.New(s, api.Options{}))
			defer srv.Close()
			var first, current []time.Duration
			for k := 0; b.Loop(); k++ {
				name := s.base.LinkName((k * 7919) % s.base.NumLinks())
				if _, err := s.ChangeFailure(context.Background(), "bench", client.FailureChange{Link: name}); err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				took, _ := getTimed(b, srv.URL, tok, "/api/fabric/metrics")
				first = append(first, took)
				current = append(current, metricsCurrentAfter(b, srv.URL, tok, t0))
				b.StopTimer()
				if _, err := s.ChangeFailure(context.Background(), "bench", client.FailureChange{Link: name, Repair: true}); err != nil {
					b.Fatal(err)
				}
				metricsCurrentAfter(b, srv.URL, tok, time.Now())
				b.StartTimer()
			}
			slices.Sort(first)
			slices.Sort(current)
			b.ReportMetric(first[len(first)-1].Seconds()*1e3, "first-read-max-ms")
			b.ReportMetric(current[len(current)/2].Seconds()*1e3, "current-after-p50-ms")
			b.ReportMetric(current[len(current)-1].Seconds()*1e3, "current-after-max-ms")
		})
	}
}

// BenchmarkReadAnswers: encoding the large read answers once per version
// on torus:16x16x16 (and torus:32x32x32 with ICN_FM_LARGE=1) with 8 jobs
// and a failed link: GET /api/fabric assembled from its pieces against
// encoding Service.Fabric, and GET /api/fabric/load written by hand
// against encodeJSON; both give the same bytes.
func BenchmarkReadAnswers(b *testing.B) {
	specs := []string{"torus:16x16x16"}
	if os.Getenv("ICN_FM_LARGE") != "" {
		specs = append(specs, "torus:32x32x32")
	}
	for _, spec := range specs {
		s, _ := openTest(b, b.TempDir(), spec, nil)
		for range 8 {
			if _, err := s.Submit("bench", client.JobRequest{Nodes: 64, Transit: 16}); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := s.ChangeFailure(context.Background(), "bench", client.FailureChange{Link: s.g.LinkName(7)}); err != nil {
			b.Fatal(err)
		}
		loads, efi := s.LinkLoads(), s.mc.linkEFI()
		for _, c := range []struct {
			name string
			run  func() []byte
		}{
			{"fabric/pieces", func() []byte { s.reads.fabric = nil; return s.FabricJSON() }},
			{"fabric/encodeJSON", func() []byte { d, _ := client.Encode(s.Fabric()); return d }},
			{"load/by-hand", func() []byte { return appendLoadsJSON(nil, loads, efi) }},
			{"load/encodeJSON", func() []byte { d, _ := client.Encode(map[string]any{"routes": loads, "efi": efi}); return d }},
		} {
			b.Run(spec+"/"+c.name, func(b *testing.B) {
				var n int
				for b.Loop() {
					n = len(c.run())
				}
				b.ReportMetric(float64(n)/1e6, "answer-MB")
			})
		}
		s.Close()
	}
}
