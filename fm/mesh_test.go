package fm

import (
	"context"
	"slices"
	"testing"

	"github.com/icn-hpc/icn/fm/client"
)

// TestMeshDimensionFabric runs the service on a torus with a mesh
// dimension: it takes jobs, their tables name the mesh dimension, use no
// wrap link along it and verify; they verify again after a restart and
// after a failure and its repair; the fabric lists the spec with mesh=
// and exactly the links of the mixed torus.
func TestMeshDimensionFabric(t *testing.T) {
	dir := t.TempDir()
	s, _ := openTest(t, dir, "torus:4x3x2:mesh=Z", nil)
	f := s.Fabric()
	if f.Spec != "torus:4x3x2:mesh=Z" || len(f.Links) != 24+24+12 || !f.Jobs {
		t.Fatalf("fabric %s: %d links, jobs %v (%s)", f.Spec, len(f.Links), f.Jobs, f.NoJobs)
	}
	var ids []int
	for range 3 {
		j, err := s.Submit("t", client.JobRequest{Nodes: 5, Transit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if !j.Stats.DeadlockFree || j.Table == nil || !slices.Equal(j.Table.Mesh, []string{"Z"}) {
			t.Fatalf("job %d: table %+v mesh %v", j.ID, j.Stats, j.Table.Mesh)
		}
		for _, r := range j.Table.Routes {
			z := r.Src[2]
			for _, d := range r.Dirs {
				switch d {
				case "+Z":
					z++
				case "-Z":
					z--
				}
				if z < 0 || z > 1 {
					t.Fatalf("job %d: route %v → %v %v leaves the Z mesh", j.ID, r.Src, r.Dst, r.Dirs)
				}
			}
		}
		ids = append(ids, j.ID)
	}
	checkDisjoint(t, s)
	for _, id := range ids {
		if ok, problem, err := s.VerifyJob(id); !ok || err != nil {
			t.Fatalf("job %d: %s %v", id, problem, err)
		}
	}
	s.Close()
	s, _ = openTest(t, dir, "", nil)
	defer s.Close()
	j, err := s.Job(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	// Fail a link between two of the job's nodes (one along Z if any),
	// then repair it.
	link := ""
	for _, l := range s.Fabric().Links {
		a, b := s.g.NodeName(l.A), s.g.NodeName(l.B)
		if slices.Contains(j.Active, a) && slices.Contains(j.Active, b) && (link == "" || l.Dim == 2) {
			link = l.Name
		}
	}
	if link == "" {
		t.Fatalf("job %d on %v has no inner link", j.ID, j.Active)
	}
	for _, repair := range []bool{false, true} {
		if _, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: link, Repair: repair}); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			jj, err := s.Job(id)
			if err != nil {
				t.Fatal(err)
			}
			if ok, problem, _ := s.VerifyJob(id); jj.Reachable && !ok {
				t.Fatalf("job %d after %s %s (repair %v): %s", id, link, "failure", repair, problem)
			}
		}
	}
	if _, err := s.ChangeFailure(context.Background(), "t", client.FailureChange{Link: "0.0.1+Z"}); err == nil {
		t.Fatal("a link beyond the end of the Z mesh accepted")
	}
}
