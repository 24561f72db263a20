package sched

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"testing"

	"github.com/icn-hpc/icn/alloc"
	"github.com/icn-hpc/icn/internal/alloctest"
	"github.com/icn-hpc/icn/topology"
)

func graphRouter(g *topology.Graph) (alloc.Router, error) { return alloctest.GraphRouter{G: g}, nil }

func TestExperimentsShardAndMerge(t *testing.T) {
	o := ExperimentOptions{Seed: 3, Stream: SyntheticParams{Jobs: 40, Span: 2 * day, MaxTime: 4 * 3600}, TransitFrac: 1}
	nets := []string{"4x2x2", "3x3x2"}
	whole, err := Utilization(nets, []int{1, 4}, false, o, graphRouter)
	if err != nil {
		t.Fatal(err)
	}
	var files []io.Reader
	var names []string
	for i := 0; i < 3; i++ {
		o.Shard = Shard{i, 3}
		part, err := Utilization(nets, []int{1, 4}, false, o, graphRouter)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(ShardFile{Experiment: "util", Shard: []string{"0/3", "1/3", "2/3"}[i], Util: part})
		files = append(files, bytes.NewReader(b))
		names = append(names, "part")
	}
	merged, err := MergeShards(files, names)
	if err != nil {
		t.Fatal(err)
	}
	if len(merged.Util) != len(whole) {
		t.Fatalf("merged %d rows, whole run %d", len(merged.Util), len(whole))
	}
	// Same rows whatever the split (ignoring timing fields).
	norm := func(rows []UtilRow) map[string]UtilRow {
		m := map[string]UtilRow{}
		for _, r := range rows {
			r.AllocSecs = 0
			m[r.Network+r.Algo+string(rune('0'+r.Window))] = r
		}
		return m
	}
	if !reflect.DeepEqual(norm(merged.Util), norm(whole)) {
		t.Fatal("sharded run differs from the whole run")
	}
	if _, err := MergeShards(files[:2], names[:2]); err == nil {
		t.Error("merge with a missing shard accepted")
	}
	for _, s := range Summarize(whole) {
		if s.BaselineU <= 0 || s.ImprovedU <= 0 {
			t.Errorf("summary %+v", s)
		}
	}
	o.Shard = Shard{}
	rows, err := Solutions(nets, o, graphRouter)
	if len(rows) != len(nets) {
		t.Fatalf("%d rows for %d networks", len(rows), len(nets))
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Attempts == 0 || r.ImprovedMean < r.BaselineMean {
			t.Errorf("solutions %+v", r)
		}
	}
}
