package fm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/icn-hpc/icn/fm/client"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/routing"
	"github.com/icn-hpc/icn/topology"
)

// usedLinks names the links a job's routes use, in link order.
func usedLinks(s *Service, j *client.JobRecord) []string {
	seen := map[int]bool{}
	walkTableLinks(s.g, mustTable(j), func(l int) { seen[l] = true })
	var ls []int
	for l := range seen {
		ls = append(ls, l)
	}
	slices.Sort(ls)
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = s.g.LinkName(l)
	}
	return out
}

// idleLinks returns the links whose two nodes no job holds.
func idleLinks(s *Service) []int {
	var out []int
	for l := range s.g.NumLinks() {
		if lk := s.g.Link(l); s.state.Available(int(lk.A)) && s.state.Available(int(lk.B)) {
			out = append(out, l)
		}
	}
	return out
}

func change(t *testing.T, s *Service, ch client.FailureChange) *client.FailureResult {
	t.Helper()
	res, err := s.ChangeFailure(context.Background(), "t", ch)
	if err != nil {
		t.Fatalf("%+v: %v", ch, err)
	}
	return res
}

// TestRepairKeepsDetour is the audit's reproduction: a 40-node job on
// torus:8x8x8 rerouted around a failed link of its own stays rerouted
// while a failure and repair elsewhere re-balance it (its link is still
// failed), and the repair of its link gives it a table that verifies on
// the repaired fabric (angara* admits other turns there than on the
// fabric the detour was built on) and the original routing state.
func TestRepairKeepsDetour(t *testing.T) {
	s, _ := openTest(t, t.TempDir(), "torus:8x8x8", nil)
	defer s.Close()
	j, err := s.Submit("t", client.JobRequest{Nodes: 40})
	if err != nil {
		t.Fatal(err)
	}
	own := ""
	for _, l := range usedLinks(s, j) {
		change(t, s, client.FailureChange{Link: l})
		if s.jobs[j.ID].Routing == client.RouteRerouted {
			own = l
			break
		}
		change(t, s, client.FailureChange{Link: l, Repair: true}) // it broke the job: try the next
	}
	if own == "" {
		t.Fatal("no failed link of the job leaves it rerouted")
	}
	other := s.g.LinkName(idleLinks(s)[0])
	change(t, s, client.FailureChange{Link: other})
	change(t, s, client.FailureChange{Link: other, Repair: true})
	if got := s.jobs[j.ID]; got.Routing != client.RouteRerouted {
		t.Fatalf("after a repair elsewhere, with its link %s still failed, the job is %q", own, got.RoutingName())
	}
	checkJobsRouted(t, s)
	change(t, s, client.FailureChange{Link: own, Repair: true})
	ok, problem, err := s.VerifyJob(j.ID)
	if err != nil || !ok {
		t.Fatalf("after the repair of its link %s the job does not verify: %s %v", own, problem, err)
	}
	if got := s.jobs[j.ID]; got.Routing != client.RouteOriginal || len(got.Table.FailedLinks) != 0 {
		t.Fatalf("after every repair the job is %q on a table built around %v", got.RoutingName(), got.Table.FailedLinks)
	}
}

// TestRandomFailuresKeepTablesValid fails and repairs random links and
// nodes of small tori holding several jobs: after every change every
// running job that is not broken verifies on the current fabric (broken
// ones say why), and once everything is repaired every job is back on a
// verifying table in the original routing state.
func TestRandomFailuresKeepTablesValid(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		topo := []string{"torus:4x4x4", "torus:6x6"}[seed%2]
		t.Run(fmt.Sprintf("%s/seed=%d", topo, seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 15))
			s, _ := openTest(t, t.TempDir(), topo, nil)
			defer s.Close()
			for range 4 {
				if _, err := s.Submit("t", client.JobRequest{Nodes: 3 + rng.IntN(5), Transit: 1}); err != nil {
					t.Fatal(err)
				}
			}
			var links, nodes []string // failed now
			for step := 0; step < 30; step++ {
				var ch client.FailureChange
				switch k := rng.IntN(10); {
				case k < 4 || len(links)+len(nodes) == 0:
					ch.Link = s.g.LinkName(rng.IntN(s.g.NumLinks()))
					if slices.Contains(links, ch.Link) {
						continue
					}
					links = append(links, ch.Link)
				case k < 5:
					ch.Node = s.g.NodeName(rng.IntN(s.g.NumNodes()))
					if slices.Contains(nodes, ch.Node) {
						continue
					}
					nodes = append(nodes, ch.Node)
				case len(links) > 0 && (k < 8 || len(nodes) == 0):
					i := rng.IntN(len(links))
					ch = client.FailureChange{Link: links[i], Repair: true}
					links = slices.Delete(links, i, i+1)
				default:
					i := rng.IntN(len(nodes))
					ch = client.FailureChange{Node: nodes[i], Repair: true}
					nodes = slices.Delete(nodes, i, i+1)
				}
				res := change(t, s, ch)
				t.Logf("%+v: %+v", ch, res.Jobs)
				checkJobsRouted(t, s)
				if t.Failed() {
					t.Fatalf("after step %d", step)
				}
			}
			for _, l := range links {
				change(t, s, client.FailureChange{Link: l, Repair: true})
				checkJobsRouted(t, s)
			}
			for _, n := range nodes {
				change(t, s, client.FailureChange{Node: n, Repair: true})
				checkJobsRouted(t, s)
			}
			for id, j := range s.jobs {
				if ok, problem, _ := s.VerifyJob(id); !ok || j.Routing != client.RouteOriginal {
					t.Errorf("everything repaired: job %d is %q, verifies %v %s", id, j.RoutingName(), ok, problem)
				}
			}
		})
	}
}

// recordingRouting records which tables were verified.
type recordingRouting struct {
	Routing
	mu       *sync.Mutex
	verified map[string]bool // by the table's active nodes
}

func (r recordingRouting) VerifyTable(tf *routing.TableJSON) error {
	r.mu.Lock()
	r.verified[fmt.Sprint(tf.Active)] = true
	r.mu.Unlock()
	return r.Routing.VerifyTable(tf)
}

// turnsChangedAmong reports, by brute force over every pair of links
// that meet at a node of the job, whether angara* on g and on h admit a
// different order-violating turn between two of the job's links.
func turnsChangedAmong(t *testing.T, g, h *topology.Graph, j *client.JobRecord) bool {
	t.Helper()
	a, err := alloc.NewAngaraRouter(g, "angara*")
	if err != nil {
		t.Fatal(err)
	}
	b, err := alloc.NewAngaraRouter(h, "angara*")
	if err != nil {
		t.Fatal(err)
	}
	held := map[int]bool{}
	for _, n := range append(slices.Clone(j.Active), j.TransitNodes...) {
		held[g.NodeByName(n)] = true
	}
	for c := range g.NumChannels() {
		if !held[g.Src(c)] || !held[g.Dst(c)] {
			continue
		}
		for _, next := range g.Out(g.Dst(c)) {
			if !held[g.Dst(int(next))] {
				continue
			}
			dim, sign := g.Dir(int(next))
			d := routing.Plus(dim)
			if sign < 0 {
				d = routing.Minus(dim)
			}
			if a.R.ExtraAllowed(c, d) != b.R.ExtraAllowed(c, d) {
				return true
			}
		}
	}
	return false
}

// TestFailureVerifiesOnlyWhereItReaches: a failure or repair of a link
// between free nodes verifies again exactly the tables of the jobs among
// whose nodes angara* admits other turns afterwards (found here by brute
// force); the other jobs, placed on the healthy fabric, are left alone
// and still verify.
func TestFailureVerifiesOnlyWhereItReaches(t *testing.T) {
	var mu sync.Mutex
	verified := map[string]bool{}
	angara := AngaraRouting("angara*")
	s := eightJobs(t, func(g *topology.Graph) (Routing, error) {
		r, err := angara(g)
		return recordingRouting{r, &mu, verified}, err
	})
	idle := idleLinks(s)
	left := 0 // changes that verified no table
	for _, l := range idle[:min(len(idle), 24)] {
		for _, repair := range []bool{false, true} {
			before := s.g
			clear(verified)
			res := change(t, s, client.FailureChange{Link: s.g.LinkName(l), Repair: repair})
			if len(res.Jobs) != 0 {
				t.Fatalf("%s (repair %v) between free nodes re-routed %+v", s.g.LinkName(l), repair, res.Jobs)
			}
			n := 0
			for _, j := range s.jobs {
				want := turnsChangedAmong(t, before, s.g, j)
				if got := verified[fmt.Sprint(j.Table.Active)]; got != want {
					t.Errorf("%s (repair %v): job %d verified %v, the rule's turns among its nodes changed %v", s.g.LinkName(l), repair, j.ID, got, want)
				}
				if want {
					n++
				}
			}
			if n == 0 {
				left++
			}
			checkJobsRouted(t, s)
		}
	}
	t.Logf("%d of %d changes verified no table", left, 2*min(len(idle), 24))
	if left == 0 {
		t.Error("every change verified some table again")
	}
}

// TestTurnChangeRepairsInPlace: a failure of a link between free nodes,
// or of a free node, that changes the rule's turns among a job's links
// reaches its table, which the in-place repair checks instead of a
// whole verification. Where the verification finds the table holding
// (TestFailureVerifiesOnlyWhereItReaches, the same jobs and links), the
// repair moves no route and keeps the table, and every table verifies
// after every change.
func TestTurnChangeRepairsInPlace(t *testing.T) {
	s := eightJobs(t, AngaraRouting("angara*"))
	var changes []client.FailureChange
	idle := idleLinks(s)
	for _, l := range idle[:min(len(idle), 24)] {
		changes = append(changes, client.FailureChange{Link: s.g.LinkName(l)})
	}
	for v := 0; v < s.g.NumNodes() && len(changes) < 36; v += 7 {
		if s.state.Available(v) {
			changes = append(changes, client.FailureChange{Node: s.g.NodeName(v)})
		}
	}
	reached := 0
	for _, ch := range changes {
		before := s.g
		tables := map[int]*routing.TableJSON{}
		for id, j := range s.jobs {
			tables[id] = j.Table
		}
		res := change(t, s, ch)
		if len(res.Jobs) != 0 {
			t.Fatalf("%+v of free nodes re-routed %+v", ch, res.Jobs)
		}
		for id, j := range s.jobs {
			if turnsChangedAmong(t, before, s.g, j) {
				reached++
			}
			if j.Table != tables[id] {
				t.Fatalf("%+v: job %d has a new table", ch, id)
			}
		}
		checkJobsRouted(t, s)
		ch.Repair = true
		change(t, s, ch)
	}
	if reached == 0 {
		t.Fatal("no failure changed the turns among a job's links: the test tests nothing")
	}
	t.Logf("%d tables reached by a change of turns", reached)
}

// eightJobs opens a service on torus:8x8x8 with routing nr and places
// eight jobs of 16 nodes (transit allowance 4); it closes with the test.
func eightJobs(t *testing.T, nr RoutingFactory) *Service {
	t.Helper()
	s, _, err := Open(Config{DBPath: filepath.Join(t.TempDir(), "fm.db"), Topo: "torus:8x8x8", NewRouting: nr})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for range 8 {
		if _, err := s.Submit("t", client.JobRequest{Nodes: 16, Transit: 4}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}
