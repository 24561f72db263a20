package fm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/client"
)

// TestKill9Large is the crash test at the size of the service's targets:
// the store of BenchmarkServiceTargets (torus:32x32x32 at 60 %, kept in
// ICN_FM_STATE by the benchmark), served by a child process; 10 clients
// submit and release jobs and join multicast groups while the service is
// killed with SIGKILL three times. After each restart every acknowledged
// submit, release and join is there, no node is held twice, and every
// running job's table verifies. Runs only with ICN_FM_LARGE=1 and a kept
// store.
func TestKill9Large(t *testing.T) {
	keep := os.Getenv("ICN_FM_STATE")
	if os.Getenv("ICN_FM_LARGE") == "" || keep == "" {
		t.Skip("set ICN_FM_LARGE=1 and ICN_FM_STATE (run BenchmarkServiceTargets first)")
	}
	data, err := os.ReadFile(filepath.Join(keep, "fm.db"))
	if err != nil {
		t.Skipf("no kept store: %v", err)
	}
	db := filepath.Join(t.TempDir(), "fm.db")
	if err := os.WriteFile(db, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// A new token for the copy (the kept store's file may have none).
	s0, _, err := Open(Config{DBPath: db, NewRouting: AngaraRouting("angara*"), RotateToken: true})
	if err != nil {
		t.Fatal(err)
	}
	s0.Close()
	r := rand.New(rand.NewPCG(9, 28))
	acked := map[int]string{}
	joined := map[string][]string{} // group -> acknowledged members
	var ops, kills int
	for round := 0; round <= 3; round++ {
		t0 := time.Now()
		cmd, url := startChild(t, db, "ICN_FM_CHILD_TOPO=")
		t.Logf("round %d: restart took %.1f s", round, time.Since(t0).Seconds())
		tok, err := os.ReadFile(TokenFile(db))
		if err != nil {
			t.Fatal(err)
		}
		c := &apiClient{t: t, url: url, token: strings.TrimSpace(string(tok))}
		checkAcked(t, c, acked)
		checkJoined(t, c, joined)
		if round == 3 {
			cmd.Process.Kill()
			cmd.Wait()
			break
		}
		var mu sync.Mutex
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := 0; w < 10; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				hc := &http.Client{Timeout: 30 * time.Second}
				for i := 0; ctx.Err() == nil; i++ {
					switch (i + w) % 3 {
					case 0: // a group of 4, joined back to back
						gid := fmt.Sprintf("k%d-%d-%d", round, w, i)
						for k := 0; k < 4 && ctx.Err() == nil; k++ {
							member := fmt.Sprintf("%d.%d.%d", (w*7+i)%32, (round*5+k)%32, (i*3+k)%32)
							code, _ := rawDo(hc, c, "POST", "/api/mcast/join", fmt.Sprintf(`{"group":%q,"member":%q,"member_count":4}`, gid, member))
							if code != 200 {
								break
							}
							mu.Lock()
							joined[gid] = append(joined[gid], member)
							mu.Unlock()
						}
					case 1: // release one of the jobs this test placed
						mu.Lock()
						rel := 0
						for id, st := range acked {
							if st == "running" && (id+i+w)%2 == 0 {
								rel = id
								break
							}
						}
						mu.Unlock()
						if rel == 0 {
							continue
						}
						if code, _ := rawDo(hc, c, "DELETE", fmt.Sprintf("/api/jobs/%d", rel), ""); code == 200 {
							mu.Lock()
							acked[rel] = "released"
							ops++
							mu.Unlock()
						}
					default:
						code, id := rawDo(hc, c, "POST", "/api/jobs", fmt.Sprintf(`{"nodes": %d, "transit": 2}`, 8+8*((i+w)%4)))
						if code == 201 {
							mu.Lock()
							acked[id] = "running"
							ops++
							mu.Unlock()
						}
					}
				}
			}(w)
		}
		time.Sleep(time.Duration(20+r.IntN(20)) * time.Second)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		kills++
		cancel()
		wg.Wait()
	}
	n, full := 0, 0
	for _, ms := range joined {
		n += len(ms)
		if len(ms) == 4 {
			full++
		}
	}
	s, _, err := Open(Config{DBPath: db, NewRouting: AngaraRouting("angara*")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkJobsRouted(t, s)
	checkDisjoint(t, s)
	t.Logf("%d kills: %d job changes and %d joins (%d groups complete) acknowledged, none lost", kills, ops, n, full)
	if ops == 0 || n == 0 {
		t.Fatal("nothing was acknowledged")
	}
}

// checkJoined checks every group whose four joins were acknowledged is
// there, Ready, with those members; a group cut short by a kill may have
// timed out since (then it is gone or Destroying), but while it is still
// collecting joins it holds every acknowledged one.
func checkJoined(t *testing.T, c *apiClient, joined map[string][]string) {
	t.Helper()
	var groups []client.GroupRecord
	getJSON(t, c, "/api/mcast", &groups)
	byID := map[string]client.GroupRecord{}
	for _, g := range groups {
		byID[g.ID] = g
	}
	for gid, ms := range joined {
		g, ok := byID[gid]
		if len(ms) == 4 && (!ok || g.State != "Ready") {
			t.Fatalf("group %s: all 4 joins acknowledged, now %v %s %s", gid, ok, g.State, g.Reason)
		}
		if !ok || g.State == "Destroying" {
			continue
		}
		for _, m := range ms {
			if !slices.Contains(g.Members, m) {
				t.Fatalf("acknowledged join of %s to %s lost (%s, members %v)", m, gid, g.State, g.Members)
			}
		}
	}
}
