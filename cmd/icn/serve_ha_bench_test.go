package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm"
	fmc "github.com/icn-hpc/icn/fm/client"
	"github.com/icn-hpc/icn/fm/store"
	"github.com/icn-hpc/icn/internal/etcdtest"
)

// BenchmarkHATargets measures a fabric manager of two instances on a
// three-member etcd cluster against one on a bbolt file, both on the
// state BenchmarkServiceTargets (fm) keeps in ICN_FM_STATE
// (torus:32x32x32, 197 jobs, 58.5 % busy), and 100 multicast groups of 8
// members added by the benchmark on both:
//
//   - etcd-space: the etcd members' database (in use, the largest
//     member) against the bbolt file, after the copy and after the work;
//   - join, place, fail: each operation sent to the etcd leader and to
//     the bbolt service in turn, same operation on the same state; the
//     median of the per-operation ratios etcd / bbolt, and the medians;
//   - standby GET p99: GET /api/jobs, /api/fabric/load and /api/mcast on
//     the standby every 20 ms while the leader places jobs and takes
//     failures;
//   - takeover: the leader killed (SIGKILL), then a placement sent to
//     both instances (the client follows the standby as it takes over):
//     the time from the kill to its answer, three times.
//
// Runs only with ICN_FM_LARGE=1 and ICN_FM_STATE=DIR.
func BenchmarkHATargets(b *testing.B) {
	keep := os.Getenv("ICN_FM_STATE")
	if os.Getenv("ICN_FM_LARGE") == "" || keep == "" {
		b.Skip("set ICN_FM_LARGE=1 and ICN_FM_STATE=DIR (after BenchmarkServiceTargets in fm kept its state there)")
	}
	for i := 0; i < b.N; i++ {
		haTargets(b, keep)
	}
}

func haTargets(b *testing.B, keep string) {
	dir := b.TempDir()
	ctx := context.Background()
	boltDB := filepath.Join(dir, "bolt.db")
	data, err := os.ReadFile(filepath.Join(keep, "fm.db"))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(boltDB, data, 0o600); err != nil {
		b.Fatal(err)
	}
	tokFile := filepath.Join(dir, "token")
	svc, tok, err := fm.Open(fm.Config{DBPath: boltDB, TokenFile: tokFile, RotateToken: true, NewRouting: fm.AngaraRouting("angara*")})
	if err != nil {
		b.Fatal(err)
	}
	svc.Close()
	// The same state on etcd.
	ec := etcdtest.Start(b, 3)
	url := ec.URL("icn/targets")
	start := time.Now()
	copyCmd := exec.Command(os.Args[0], "-test.run=^$")
	copyCmd.Env = append(os.Environ(), "ICN_CLI_ARGS="+strings.Join([]string{"serve", "store", "copy", "--from", "bolt:" + boltDB, "--to", url}, "\x1f"))
	if out, err := copyCmd.CombinedOutput(); err != nil {
		b.Fatalf("store copy: %v: %s", err, out)
	}
	b.ReportMetric(time.Since(start).Seconds(), "copy-s")
	cfg, _ := store.ParseEtcdURL(url)
	est, _, err := store.OpenEtcdStore(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer est.Close()
	space := func(what string) {
		size, inUse, err := est.Etcd().Space(ctx)
		if err != nil {
			b.Fatal(err)
		}
		fi, _ := os.Stat(boltDB)
		b.ReportMetric(float64(inUse)/1e6, "etcd-"+what+"-MB")
		b.ReportMetric(float64(size)/1e6, "etcd-"+what+"-file-MB")
		b.ReportMetric(float64(inUse)/float64(fi.Size()), "etcd/bolt-"+what)
		fmt.Fprintf(os.Stderr, "HATargets: space %s: etcd %.1f MB in use (%.1f MB file), bbolt %.1f MB\n", what, float64(inUse)/1e6, float64(size)/1e6, float64(fi.Size())/1e6)
	}
	space("copy")
	boltSvc := newServeInstance(b, "bolt", "--db", boltDB, "--token-file", tokFile, "--mcast-timeout", "10m")
	a := newHAInstance(b, "a", url, tokFile, "--lease", "3s", "--mcast-timeout", "10m")
	sb := newHAInstance(b, "b", url, tokFile, "--lease", "3s", "--mcast-timeout", "10m")
	for _, in := range []*haInstance{boltSvc, a, sb} {
		t0 := time.Now()
		in.startWithin(10 * time.Minute)
		fmt.Fprintf(os.Stderr, "HATargets: %s serves after %.1f s\n", in.name, time.Since(t0).Seconds())
	}
	ins := []*haInstance{a, sb}
	lead := leaderOf(b, ins, time.Minute)
	leader, standby := ins[lead], ins[1-lead]
	onEtcd := fmc.New(leader.url, tok)
	onBolt := fmc.New(boltSvc.url, tok)
	for _, c := range []*fmc.Client{onEtcd, onBolt} {
		c.HTTP = &http.Client{Timeout: 2 * time.Minute}
	}
	var fv fmc.FabricView
	if err := onBolt.Get(ctx, "/api/fabric", &fv); err != nil {
		b.Fatal(err)
	}
	// The standby's reads meanwhile.
	stop := make(chan struct{})
	var reads []time.Duration
	var readsMu sync.Mutex
	go func() {
		hc := &http.Client{Timeout: 10 * time.Second}
		paths := []string{"/api/jobs", "/api/fabric/load", "/api/mcast"}
		for k := 0; ; k++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			req, _ := http.NewRequest("GET", standby.url+paths[k%len(paths)], nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			t0 := time.Now()
			resp, err := hc.Do(req)
			if err != nil {
				continue
			}
			buf := make([]byte, 64<<10)
			for {
				if _, err := resp.Body.Read(buf); err != nil {
					break
				}
			}
			resp.Body.Close()
			readsMu.Lock()
			reads = append(reads, time.Since(t0))
			readsMu.Unlock()
		}
	}()
	// The same operations on both, in turn.
	ratios := map[string][]float64{}
	times := map[string][2][]time.Duration{}
	pair := func(kind string, op func(c *fmc.Client) error) {
		var d [2]time.Duration
		for i, c := range []*fmc.Client{onEtcd, onBolt} {
			t0 := time.Now()
			if err := op(c); err != nil {
				b.Fatalf("%s on %s: %v", kind, map[int]string{0: "etcd", 1: "bbolt"}[i], err)
			}
			d[i] = time.Since(t0)
		}
		ratios[kind] = append(ratios[kind], d[0].Seconds()/d[1].Seconds())
		t := times[kind]
		t[0], t[1] = append(t[0], d[0]), append(t[1], d[1])
		times[kind] = t
	}
	r := rand.New(rand.NewPCG(42, 28))
	for gi := 0; gi < 100; gi++ {
		var members []string
		for len(members) < 8 {
			n := fv.Nodes[r.IntN(len(fv.Nodes))].Name
			if !slices.Contains(members, n) {
				members = append(members, n)
			}
		}
		for k, m := range members {
			req := fmc.McastRequest{Group: fmt.Sprintf("g%d", gi), Member: m, MemberCount: 8, RequestID: fmt.Sprintf("j%d-%d", gi, k)}
			pair("join", func(c *fmc.Client) error { return c.Do(ctx, "POST", "/api/mcast/join", req, nil, true) })
		}
	}
	var placed [2][]int
	for k := 0; k < 10; k++ {
		m := 8 << r.IntN(4)
		req := fmc.JobRequest{Nodes: m, Transit: m / 4, RequestID: fmt.Sprintf("p%d", k)}
		i := 0
		pair("place", func(c *fmc.Client) error {
			var j fmc.JobRecord
			err := c.Do(ctx, "POST", "/api/jobs", req, &j, true)
			placed[i] = append(placed[i], j.ID)
			i++
			return err
		})
	}
	var jobs []fmc.JobRecord
	if err := onBolt.Get(ctx, "/api/jobs", &jobs); err != nil {
		b.Fatal(err)
	}
	for k := 0; k < 10; k++ {
		link := jobs[r.IntN(len(jobs))].Active[0] + "+X"
		for _, repair := range []bool{false, true} {
			ch := fmc.FailureChange{Link: link, Repair: repair}
			pair("fail", func(c *fmc.Client) error { return c.Do(ctx, "POST", "/api/fabric/failures", ch, nil, false) })
		}
	}
	for k := range placed[0] {
		ids := [2]int{placed[0][k], placed[1][k]}
		i := 0
		pair("release", func(c *fmc.Client) error {
			err := c.Do(ctx, "DELETE", fmt.Sprintf("/api/jobs/%d", ids[i]), nil, nil, false)
			i++
			return err
		})
	}
	close(stop)
	for _, kind := range []string{"join", "place", "fail", "release"} {
		rs := ratios[kind]
		sort.Float64s(rs)
		b.ReportMetric(rs[len(rs)/2], kind+"-etcd/bolt")
		t := times[kind]
		b.ReportMetric(median(t[0]).Seconds()*1e3, kind+"-etcd-ms")
		b.ReportMetric(median(t[1]).Seconds()*1e3, kind+"-bolt-ms")
		fmt.Fprintf(os.Stderr, "HATargets: %s: etcd %v, bbolt %v (medians), ratio median %.2f, range %.2f–%.2f over %d\n",
			kind, median(t[0]).Round(time.Millisecond), median(t[1]).Round(time.Millisecond), rs[len(rs)/2], rs[0], rs[len(rs)-1], len(rs))
	}
	readsMu.Lock()
	sort.Slice(reads, func(i, j int) bool { return reads[i] < reads[j] })
	if len(reads) > 0 {
		p99 := reads[len(reads)*99/100]
		b.ReportMetric(p99.Seconds()*1e3, "standby-GET-p99-ms")
		fmt.Fprintf(os.Stderr, "HATargets: standby GETs: %d, p50 %v, p99 %v, max %v\n", len(reads), reads[len(reads)/2], p99, reads[len(reads)-1])
	}
	readsMu.Unlock()
	space("work")
	// Takeovers.
	var takeovers []time.Duration
	for k := 0; k < 3; k++ {
		lead := leaderOf(b, ins, time.Minute)
		both := fmc.New(ins[0].url+","+ins[1].url, tok)
		both.Retry = time.Minute
		killed := time.Now()
		ins[lead].signal(syscall.SIGKILL)
		var j fmc.JobRecord
		if err := both.Do(ctx, "POST", "/api/jobs", fmc.JobRequest{Nodes: 8, Transit: 2, RequestID: fmt.Sprintf("takeover-%d", k)}, &j, true); err != nil {
			b.Fatalf("placement after the kill: %v", err)
		}
		takeovers = append(takeovers, time.Since(killed))
		fmt.Fprintf(os.Stderr, "HATargets: takeover %d: first placement answered %.2f s after the kill\n", k, time.Since(killed).Seconds())
		ins[lead].kill()
		ins[lead].startWithin(10 * time.Minute)
	}
	sort.Slice(takeovers, func(i, j int) bool { return takeovers[i] < takeovers[j] })
	b.ReportMetric(takeovers[len(takeovers)-1].Seconds(), "takeover-max-s")
	b.ReportMetric(takeovers[0].Seconds(), "takeover-min-s")
}

func median(d []time.Duration) time.Duration {
	c := slices.Clone(d)
	slices.Sort(c)
	return c[len(c)/2]
}
