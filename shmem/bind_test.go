package shmem

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPlaceOnHost: on every host the PEs get the indices 0, 1, … in PE
// order (local and loopback addresses are one host), checked against a
// direct count.
func TestPlaceOnHost(t *testing.T) {
	const a, b = "192.0.2.1", "192.0.2.2" // documentation addresses: never this host
	hostLists := [][]string{nil, {a}, {a, b}, {a, b, a}, {"127.0.0.1", "127.0.0.2"}, {"localhost", b, "127.0.0.1"}}
	for _, hosts := range hostLists {
		for n := 1; n <= 7; n++ {
			l := &launcher{cfg: LaunchConfig{N: n, Hosts: hosts}, groups: hostGroups(hosts)}
			key := func(pe int) string {
				if len(hosts) == 0 || isLocalHost(hosts[pe%len(hosts)]) {
					return "this host"
				}
				return hosts[pe%len(hosts)]
			}
			seen := map[string][]int{}
			for pe := range n {
				seen[key(pe)] = append(seen[key(pe)], pe)
			}
			for pe := range n {
				if idx, want := l.placeOnHost(pe), slices.Index(seen[key(pe)], pe); idx != want {
					t.Errorf("hosts %v n %d PE %d: index %d, want %d", hosts, n, pe, idx, want)
				}
			}
		}
	}
}

// TestBindFor: auto binds to cores on shm and not on TCP; core and none
// are kept on both.
func TestBindFor(t *testing.T) {
	for _, bind := range []string{"", BindAuto, BindCore, BindNone} {
		for _, tr := range []string{TransportShm, TransportTCP} {
			l := &launcher{opt: Options{Bind: bind, Transport: tr}.withDefaults()}
			want := bind
			if bind == "" || bind == BindAuto {
				want = map[string]string{TransportShm: BindCore, TransportTCP: BindNone}[tr]
			}
			if got := l.bindFor(); got != want {
				t.Errorf("bind %q over %s: %s, want %s", bind, tr, got, want)
			}
		}
	}
}

// workerBind prints, for this PE, its binding and the CPUs every thread of
// the process may run on.
func workerBind() error {
	if err := Init(); err != nil {
		return err
	}
	if err := BarrierAll(); err != nil {
		return err
	}
	tids, err := threads()
	if err != nil {
		return err
	}
	var masks []string
	for _, tid := range tids {
		cpus, err := threadCPUs(tid)
		if err != nil {
			return err
		}
		masks = append(masks, cpuList(cpus))
	}
	slices.Sort(masks)
	fmt.Printf("bind %d %s %d %s\n", MyPE(), Default().Binding(), Default().BoundCPU(), strings.Join(slices.Compact(masks), ";"))
	return Finalize()
}

// TestBindProcesses launches PEs bound to cores and unbound: a bound PE's
// threads may all run only on its CPU, the local-th allowed CPU round
// robin; unbound PEs keep the launcher's CPUs.
func TestBindProcesses(t *testing.T) {
	cpus, err := allowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	for _, bind := range []string{BindCore, BindNone} {
		t.Run(bind, func(t *testing.T) {
			n := 3
			out, err := launchBound(n, bind)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			lines := 0
			for _, line := range strings.Split(out, "\n") {
				f := strings.Fields(line)
				if len(f) != 6 || f[1] != "bind" {
					continue
				}
				lines++
				pe, _ := strconv.Atoi(f[2])
				wantCPU, wantMask := -1, cpuList(cpus)
				if bind == BindCore {
					wantCPU = cpus[pe%len(cpus)]
					wantMask = strconv.Itoa(wantCPU)
				}
				if f[3] != bind || f[4] != strconv.Itoa(wantCPU) || f[5] != wantMask {
					t.Errorf("PE %d: %q, want binding %s, CPU %d, every thread on %s", pe, line, bind, wantCPU, wantMask)
				}
			}
			if lines != n {
				t.Fatalf("%d of %d PEs reported:\n%s", lines, n, out)
			}
		})
	}
}

// cpuList renders a CPU list as "0,1".
func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// launchBound runs workerBind on n PEs with the binding bind.
func launchBound(n int, bind string) (string, error) {
	var out, errb bytes.Buffer
	_, err := Launch(context.Background(), LaunchConfig{
		N: n, Prog: os.Args[0], Args: []string{"-test.run=^$"},
		Options: Options{Heap: 1 << 20, Ring: 4096, Timeout: time.Second, InitTimeout: 20 * time.Second, Bind: bind},
		Env:     []string{envWorker + "=bind"}, Stdout: &out, Stderr: &errb, Label: true,
	})
	return out.String() + errb.String(), err
}

// FuzzBindFromEnv: the binding read from the environment is core or none
// and the local rank within range, or an error.
func FuzzBindFromEnv(f *testing.F) {
	f.Add("core", "1")
	f.Add("none", "")
	f.Add("auto", "x")
	f.Add(" core ", "-1")
	f.Fuzz(func(t *testing.T, bind, local string) {
		env := map[string]string{EnvRank: "0", EnvNPEs: "1", EnvTransport: "shm", EnvDir: "/d",
			EnvJob: "00000000000000ff", EnvBind: bind, EnvLocalRank: local}
		c, ok, err := ConfigFromEnv(func(k string) string { return env[k] })
		if !ok || err != nil {
			return
		}
		if (c.Bind != BindCore && c.Bind != BindNone) || c.LocalRank < 0 || c.LocalRank >= maxPEs {
			t.Fatalf("accepted %q %q as %+v", bind, local, c)
		}
	})
}
