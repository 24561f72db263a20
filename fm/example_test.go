package fm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/icn-hpc/icn/fm"
	"github.com/icn-hpc/icn/fm/client"
)

// A service on a 4x4x4 torus places a job, loses a link inside the job's
// node set, and routes the job again on the same nodes.
func Example() {
	dir, _ := os.MkdirTemp("", "icn-fm-example")
	defer os.RemoveAll(dir)
	s, _, err := fm.Open(fm.Config{DBPath: filepath.Join(dir, "icn.db"), Topo: "torus:4x4x4", NewRouting: fm.AngaraRouting("angara*")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	j, err := s.Submit("example", client.JobRequest{Name: "cg", Nodes: 8, Transit: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(j.Name, len(j.Active), "nodes, deadlock-free:", j.Stats.DeadlockFree)
	res, err := s.ChangeFailure(context.Background(), "example", client.FailureChange{Link: j.Active[0] + "+Y"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range res.Jobs {
		fmt.Println("job", e.ID, e.State)
	}
	now, _ := s.Job(j.ID)
	fmt.Println("affected:", res.AffectedJobs, "broken:", len(res.BrokenJobs), "reachable:", now.Reachable, "routing:", now.RoutingName())
	// Output:
	// cg 8 nodes, deadlock-free: true
	// job 1 rerouted
	// affected: [1] broken: 0 reachable: true routing: rerouted
}
