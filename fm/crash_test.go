package fm

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/icn-hpc/icn/fm/api"
	"github.com/icn-hpc/icn/fm/client"
)

// When the test binary runs with ICN_FM_CHILD set it becomes a bare
// service process (the crash test kills it with SIGKILL).
func TestMain(m *testing.M) {
	// A failure's outcome must not depend on the speed of the host: the
	// tests re-route every job before the answer unless they give a
	// budget (TestFailureBudget*).
	defaultFailureBudget = -1
	if db := os.Getenv("ICN_FM_CHILD"); db != "" {
		runChild(db)
		return
	}
	os.Exit(m.Run())
}

func runChild(db string) {
	topo, life := "torus:4x4x4", time.Minute
	if t, ok := os.LookupEnv("ICN_FM_CHILD_TOPO"); ok {
		topo, life = t, 10*time.Minute // "": the stored fabric (a large one)
	}
	s, _, err := Open(Config{DBPath: db, Topo: topo, NewRouting: AngaraRouting("angara*")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Exit(2)
	}
	fmt.Println(ln.Addr().String())
	// Exit on our own if the parent forgets us.
	go func() { time.Sleep(life); os.Exit(3) }()
	http.Serve(ln, api.New(s, api.Options{}))
}

func startChild(t *testing.T, db string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "ICN_FM_CHILD="+db), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("child did not start: %v", err)
	}
	return cmd, "http://" + strings.TrimSpace(line)
}

// TestKill9UnderLoad kills the service with SIGKILL while clients submit
// and release jobs, restarts it on the same file, and checks that every
// acknowledged change is there and nothing half-applied is visible.
func TestKill9UnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "fm.db")
	r := rand.New(rand.NewPCG(42, 7))
	acked := map[int]string{} // job id -> "running" or "released", as acknowledged
	for round := 0; round < 3; round++ {
		cmd, url := startChild(t, db)
		tok, err := os.ReadFile(TokenFile(db))
		if err != nil {
			t.Fatal(err)
		}
		c := &apiClient{t: t, url: url, token: strings.TrimSpace(string(tok))}
		// Verify what the previous rounds acknowledged.
		checkAcked(t, c, acked)
		var mu sync.Mutex
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				hc := &http.Client{Timeout: 5 * time.Second}
				for i := 0; ctx.Err() == nil; i++ {
					mu.Lock()
					var rel int
					for id, st := range acked {
						if st == "running" && (id+i+w)%3 == 0 {
							rel = id
							break
						}
					}
					mu.Unlock()
					if rel != 0 {
						code, _ := rawDo(hc, c, "DELETE", fmt.Sprintf("/api/jobs/%d", rel), "")
						if code == 200 {
							mu.Lock()
							acked[rel] = "released"
							mu.Unlock()
						}
						continue
					}
					code, id := rawDo(hc, c, "POST", "/api/jobs", fmt.Sprintf(`{"nodes": %d, "transit": 1}`, 1+(i+w)%4))
					if code == 201 {
						mu.Lock()
						acked[id] = "running"
						mu.Unlock()
					}
				}
			}(w)
		}
		time.Sleep(time.Duration(150+r.IntN(300)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		cancel()
		wg.Wait()
	}
	cmd, url := startChild(t, db)
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	tok, _ := os.ReadFile(TokenFile(db))
	c := &apiClient{t: t, url: url, token: strings.TrimSpace(string(tok))}
	checkAcked(t, c, acked)
	if len(acked) == 0 {
		t.Fatal("no request was acknowledged")
	}
	rel := 0
	for _, st := range acked {
		if st == "released" {
			rel++
		}
	}
	t.Logf("%d jobs acknowledged across 3 kills (%d releases)", len(acked), rel)
}

// rawDo sends a request and returns the status and the job id in the
// answer (if any). Connection errors count as "not acknowledged".
func rawDo(hc *http.Client, c *apiClient, method, path, body string) (int, int) {
	req, _ := http.NewRequest(method, c.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	var v struct {
		ID json.RawMessage `json:"id"`
	}
	if err := jsonDecode(resp, &v); err != nil {
		return 0, 0 // a cut-off answer is not an acknowledgement
	}
	var id int // jobs have numbers, groups names
	json.Unmarshal(v.ID, &id)
	return resp.StatusCode, id
}

// checkAcked compares the service's jobs with the acknowledged changes:
// acknowledged submits exist, acknowledged releases are released, running
// jobs hold disjoint nodes, and the audit log agrees with the job records.
func checkAcked(t *testing.T, c *apiClient, acked map[int]string) {
	t.Helper()
	code, _ := c.do("GET", "/api/jobs", nil)
	if code != 200 {
		t.Fatalf("list jobs: %d", code)
	}
	var jobs []client.JobRecord
	getJSON(t, c, "/api/jobs?all=1", &jobs)
	byID := map[int]client.JobRecord{}
	owner := map[string]int{}
	for _, j := range jobs {
		byID[j.ID] = j
		if j.State == "running" {
			for _, n := range append(append([]string(nil), j.Active...), j.TransitNodes...) {
				if o, dup := owner[n]; dup {
					t.Fatalf("node %s held by jobs %d and %d after restart", n, o, j.ID)
				}
				owner[n] = j.ID
			}
		}
	}
	for id, st := range acked {
		j, ok := byID[id]
		if !ok {
			t.Fatalf("acknowledged job %d lost", id)
		}
		if st == "released" && j.State != "released" {
			t.Fatalf("acknowledged release of job %d lost", id)
		}
	}
	// Every stored job has exactly one submit event, every released job a
	// release event: no change is half applied.
	req, _ := http.NewRequest("GET", c.url+"/api/audit?limit=1000", nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	var events []client.Event
	after := uint64(0)
	for {
		req.URL.RawQuery = fmt.Sprintf("after=%d&limit=1000", after)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var page []client.Event
		jsonDecode(resp, &page)
		resp.Body.Close()
		if len(page) == 0 {
			break
		}
		events = append(events, page...)
		after = page[len(page)-1].Seq
	}
	submits, releases := map[string]int{}, map[string]int{}
	for _, e := range events {
		switch e.Action {
		case "job.submit":
			submits[e.Subject]++
		case "job.release":
			releases[e.Subject]++
		}
	}
	for _, j := range jobs {
		key := fmt.Sprintf("job %d", j.ID)
		if submits[key] != 1 {
			t.Fatalf("%s has %d submit events", key, submits[key])
		}
		want := 0
		if j.State == "released" {
			want = 1
		}
		if releases[key] != want {
			t.Fatalf("%s (%s) has %d release events", key, j.State, releases[key])
		}
	}
	if len(submits) != len(jobs) {
		t.Fatalf("%d submit events for %d jobs", len(submits), len(jobs))
	}
}

// getJSON decodes the answer of GET path into v.
func getJSON(t *testing.T, c *apiClient, path string, v any) {
	t.Helper()
	req, _ := http.NewRequest("GET", c.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := jsonDecode(resp, v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

func jsonDecode(resp *http.Response, v any) error {
	return json.NewDecoder(resp.Body).Decode(v)
}

// TestKill9DuringReroute kills the service while it records a link
// failure that affects some of 20 running jobs. After a restart either
// the failure is not recorded and every job keeps its old table, or it is
// recorded and every job verifies on the new fabric or is broken with a
// reason: never a half-applied failure.
func TestKill9DuringReroute(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	r := rand.New(rand.NewPCG(15, 20))
	outcomes := map[bool]int{}
	for round := 0; round < 4; round++ {
		db := filepath.Join(t.TempDir(), "fm.db")
		cmd, url := startChild(t, db)
		tok, _ := os.ReadFile(TokenFile(db))
		c := &apiClient{t: t, url: url, token: strings.TrimSpace(string(tok))}
		for i := 0; i < 20; i++ {
			if code, _ := c.do("POST", "/api/jobs", map[string]any{"nodes": 2, "transit": 1}); code != 201 {
				t.Fatalf("job %d: HTTP %d", i, code)
			}
		}
		link := []string{"0.0.0+X", "1.0.0+X", "0.1.0+Y", "0.0.1+Z"}[round]
		hc := &http.Client{Timeout: 5 * time.Second}
		go rawDo(hc, c, "POST", "/api/fabric/failures", `{"link":"`+link+`"}`)
		time.Sleep(time.Duration(r.IntN(6000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		s, _, err := Open(Config{DBPath: db, NewRouting: AngaraRouting("angara*")})
		if err != nil {
			t.Fatal(err)
		}
		recorded := len(s.Fabric().FailedLinks) == 1
		outcomes[recorded]++
		jobs, _ := s.Jobs(false)
		if len(jobs) != 20 {
			t.Fatalf("%d jobs after the kill", len(jobs))
		}
		for _, j := range jobs {
			if !recorded && j.Routing != "" {
				t.Errorf("failure not recorded but job %d is %s", j.ID, j.Routing)
			}
		}
		checkJobsRouted(t, s)
		checkDisjoint(t, s)
		s.Close()
	}
	t.Logf("failure recorded in %d of 4 kills", outcomes[true])
}
