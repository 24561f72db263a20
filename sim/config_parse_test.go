package sim

import (
	"strings"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

func TestParseStages(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Stages
		err  string
	}{
		{"1,1,1,1", BookSimStages, ""},
		{" 0, 2,3 ,100", Stages{RC: 0, VA: 2, SA: 3, ST: 100}, ""},
		{"1,2,3", Stages{}, "want four cycle counts"},
		{"1,2,3,101", Stages{}, `"101" is not a whole number`},
		{"1,2,-1,1", Stages{}, `"-1" is not a whole number`},
		{"1,x,1,1", Stages{}, `"x" is not a whole number`},
	} {
		got, err := ParseStages(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v %v, want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestPartitionWorkers(t *testing.T) {
	for _, tc := range []struct {
		spec    string
		workers int
		want    int
	}{{"torus:8x8", 4, 1}, {"torus:32x32", 4, 4}, {"torus:32x32", 1, 1}} {
		g, err := topology.Parse(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		n, err := NewNetwork(g, DefaultConfig(), false)
		if err != nil {
			t.Fatal(err)
		}
		if got := PartitionWorkers(n, tc.workers); got != tc.want {
			t.Errorf("%s, %d workers: %d, want %d", tc.spec, tc.workers, got, tc.want)
		}
	}
}

// Overlay gives the topology first, then the options in Options' order,
// and stops at the first error.
func TestBookSimOverlay(t *testing.T) {
	b := &BookSimFile{Topo: "torus:4x4", Set: map[string]string{"vcs": "4", "buf": "8", "rate": "0.1"}}
	var got []string
	if err := b.Overlay(func(k, v string) error { got = append(got, k+"="+v); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := "topo=torus:4x4 buf=8 rate=0.1 vcs=4"; strings.Join(got, " ") != want {
		t.Fatalf("overlay %v, want %s", got, want)
	}
	n := 0
	err := b.Overlay(func(k, v string) error {
		if n++; k == "rate" {
			return errTest
		}
		return nil
	})
	if err != errTest || n != 3 {
		t.Fatalf("stopped after %d with %v", n, err)
	}
}

var errTest = errorString("test")

type errorString string

func (e errorString) Error() string { return string(e) }
