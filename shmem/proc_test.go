package shmem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the worker program of multi-process tests:
// Launch starts it with envWorker naming the worker to run.
const envWorker = "ICN_SHMEM_TEST_WORKER"

func TestMain(m *testing.M) {
	if name := os.Getenv(envWorker); name != "" {
		os.Exit(runWorker(name))
	}
	os.Exit(m.Run())
}

var workers = map[string]func() error{
	"ring":     workerRing,
	"die":      workerDie,
	"hang":     workerHang,
	"exit0":    workerExit0,
	"waitdead": workerWaitDead,
	"order":    workerOrder,
	"abort":    workerAbort,
	"gexit":    workerGlobalExit,
	"killop":   workerKillOp,
	"bind":     workerBind,
}

func runWorker(name string) int {
	f := workers[name]
	if f == nil {
		fmt.Fprintln(os.Stderr, "unknown worker", name)
		return 2
	}
	if err := f(); err != nil {
		fmt.Fprintf(os.Stderr, "PE %s: %v\n", os.Getenv(EnvRank), err)
		return 3
	}
	return 0
}

func workerRing() error {
	if err := Init(); err != nil {
		return err
	}
	me, n := MyPE(), NPEs()
	c, err := CoarrayAll[int64](4)
	if err != nil {
		return err
	}
	for it := int64(1); it <= 50; it++ {
		if err := c.PutValue((me+1)%n, 0, it*100+int64(me)); err != nil {
			return err
		}
		if err := BarrierAll(); err != nil {
			return err
		}
		left := (me + n - 1) % n
		if got := c.Local()[0]; got != it*100+int64(left) {
			return fmt.Errorf("iteration %d: got %d from PE %d", it, got, left)
		}
		if err := BarrierAll(); err != nil {
			return err
		}
	}
	fmt.Printf("ring ok %d/%d %s\n", me, n, Default().TransportName())
	return Finalize()
}

// workerDie: PE 1 kills itself mid-run; the others must get an error.
func workerDie() error {
	if err := Init(); err != nil {
		return err
	}
	c, err := CoarrayAll[int64](1)
	if err != nil {
		return err
	}
	for it := 0; ; it++ {
		if MyPE() == 1 && it == 20 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		if err := c.PutValue((MyPE()+1)%NPEs(), 0, int64(it)); err != nil {
			return err
		}
		if err := BarrierAll(); err != nil {
			return err
		}
	}
}

// workerAbort: PE 1 aborts and then exits with status 0 as if nothing
// happened; PE 0 finalizes (and learns of the abort).
func workerAbort() error {
	if err := Init(); err != nil {
		return err
	}
	if MyPE() == 1 {
		Abort("input is corrupt")
		os.Exit(0)
	}
	err := Finalize()
	var pe *PEError
	if !errors.As(err, &pe) || pe.PE != 1 {
		return fmt.Errorf("Finalize after the abort of PE 1: %v", err)
	}
	return nil
}

// workerGlobalExit: PE 1 ends the job with status 7 while the others wait
// in barriers.
func workerGlobalExit() error {
	if err := Init(); err != nil {
		return err
	}
	if MyPE() == 1 {
		time.Sleep(50 * time.Millisecond)
		GlobalExit(7)
	}
	for {
		if err := BarrierAll(); err != nil {
			return err
		}
	}
}

// workerHang: PE 1 stops itself; the others must notice the silence.
func workerHang() error {
	if err := Init(); err != nil {
		return err
	}
	for it := 0; ; it++ {
		if MyPE() == 1 && it == 10 {
			syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		}
		if err := BarrierAll(); err != nil {
			return err
		}
	}
}

// workerExit0: PE 1 leaves without Finalize and with status 0.
func workerExit0() error {
	if err := Init(); err != nil {
		return err
	}
	if MyPE() == 1 {
		os.Exit(0)
	}
	for {
		if err := BarrierAll(); err != nil {
			return err
		}
	}
}

// workerWaitDead: PE 0 waits for a word PE 1 never writes; PE 1 dies.
func workerWaitDead() error {
	if err := Init(); err != nil {
		return err
	}
	c, err := CoarrayAll[uint64](1)
	if err != nil {
		return err
	}
	if MyPE() == 1 {
		time.Sleep(100 * time.Millisecond)
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	return WaitUntil(c, 0, CmpEQ, 1)
}

// workerOrder: PE 0 streams blocks of data each followed (after Fence) by a
// flag; PE 1 polls the flag and checks that the data of every flag value it
// sees is already there.
func workerOrder() error {
	if err := Init(); err != nil {
		return err
	}
	iters, _ := strconv.Atoi(os.Getenv("ORDER_ITERS"))
	if err := orderKernel(Default(), iters); err != nil {
		return err
	}
	return Finalize()
}

const orderBlock = 64

func orderKernel(w *World, iters int) error {
	data, err := NewCoarray[uint64](w, orderBlock)
	if err != nil {
		return err
	}
	flag, err := NewCoarray[uint64](w, 1)
	if err != nil {
		return err
	}
	if w.NPEs() < 2 {
		return errors.New("order test needs 2 PEs")
	}
	switch w.MyPE() {
	case 0:
		block := make([]uint64, orderBlock)
		for i := 1; i <= iters; i++ {
			for k := range block {
				block[k] = uint64(i)
			}
			if err := data.Put(1, 0, block); err != nil {
				return err
			}
			if err := w.Fence(); err != nil {
				return err
			}
			if err := flag.PutValue(1, 0, uint64(i)); err != nil {
				return err
			}
		}
	case 1:
		loc, f := data.Local(), flag.Local()
		last := uint64(0)
		for last < uint64(iters) {
			if err := WaitUntil(flag, 0, CmpGT, last); err != nil {
				return err
			}
			v := AtomicLoadLocal(&f[0])
			for k := range loc {
				if d := AtomicLoadLocal(&loc[k]); d < v {
					return fmt.Errorf("flag %d visible before data word %d (still %d)", v, k, d)
				}
			}
			last = v
		}
	}
	return w.BarrierAll()
}

func launchWorker(t *testing.T, name string, n int, tr string, hosts []string, extraEnv ...string) (string, []ProcResult, time.Duration, error) {
	t.Helper()
	var out, errb bytes.Buffer
	t0 := time.Now()
	res, err := Launch(context.Background(), LaunchConfig{
		N: n, Hosts: hosts, Prog: os.Args[0], Args: []string{"-test.run=^$"},
		Options: Options{Transport: tr, Heap: 1 << 20, Ring: 4096, Timeout: time.Second, InitTimeout: 20 * time.Second},
		Env:     append([]string{envWorker + "=" + name}, extraEnv...),
		Stdout:  &out, Stderr: &errb, Label: true, Grace: 4 * time.Second,
	})
	return out.String() + errb.String(), res, time.Since(t0), err
}

func TestLaunchRing(t *testing.T) {
	cases := []struct {
		tr    string
		hosts []string
	}{
		{TransportShm, nil},
		{TransportTCP, nil},
		{"", []string{"127.0.0.1", "127.0.0.2"}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s%v", c.tr, c.hosts), func(t *testing.T) {
			out, _, _, err := launchWorker(t, "ring", 3, c.tr, c.hosts)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if strings.Count(out, "ring ok") != 3 {
				t.Fatalf("output:\n%s", out)
			}
		})
	}
}

// TestFaults kills, stops or silently ends one PE mid-run and checks that
// every other PE gets an error naming it within a bounded time and that the
// launcher names it first.
func TestFaults(t *testing.T) {
	for _, tr := range transports {
		for _, w := range []string{"die", "hang", "exit0", "waitdead"} {
			t.Run(tr+"/"+w, func(t *testing.T) {
				n := 3
				if w == "waitdead" {
					n = 2
				}
				out, res, took, err := launchWorker(t, w, n, tr, nil)
				var je *JobError
				if !errors.As(err, &je) {
					t.Fatalf("want a JobError, got %v\n%s", err, out)
				}
				if je.Culprit() != 1 || !strings.HasPrefix(err.Error(), "shmem job failed: PE 1 ") {
					t.Errorf("launcher error does not name PE 1 first: %v", err)
				}
				if (w == "die" || w == "waitdead") && !strings.Contains(err.Error(), "killed by SIGKILL") {
					t.Errorf("launcher error does not say how PE 1 ended: %v", err)
				}
				if strings.Contains(err.Error(), "signal killed") {
					t.Errorf("launcher error names the signal twice: %v", err)
				}
				for _, r := range res {
					if r.PE == 1 {
						continue
					}
					if r.Killed || r.ExitCode != 3 {
						t.Errorf("PE %d did not fail by itself: %s\n%s", r.PE, r, out)
					}
					if !strings.Contains(out, fmt.Sprintf("[%d] PE %d: shmem: PE 1 failed", r.PE, r.PE)) {
						t.Errorf("PE %d's error does not name PE 1:\n%s", r.PE, out)
					}
				}
				// detection is bounded by the 1 s timeout plus start-up
				if took > 15*time.Second {
					t.Errorf("took %v", took)
				}
				t.Logf("%v in %v\n%s", err, took.Round(time.Millisecond), out)
			})
		}
	}
}

func TestMemoryOrderingProcesses(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			out, _, _, err := launchWorker(t, "order", 2, tr, nil, "ORDER_ITERS=3000")
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}

func TestMemoryOrderingInProcess(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			j := localJob(t, 2, tr)
			if err := j.Run(func(w *World) error { return orderKernel(w, 2000) }); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestLaunchBadInput(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		cfg  LaunchConfig
		want string
	}{
		{LaunchConfig{N: 0, Prog: "true"}, "out of range"},
		{LaunchConfig{N: 2, Prog: "/nonexistent/prog"}, "not found"},
		{LaunchConfig{N: 2, Prog: "true", Options: Options{Transport: "udp"}}, "unknown transport"},
		{LaunchConfig{N: 2, Prog: "true", Hosts: []string{""}}, "empty host"},
		{LaunchConfig{N: 2, Prog: "true", Options: Options{Timeout: time.Millisecond}}, "at least"},
	} {
		if _, err := Launch(ctx, c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: want %q, got %v", c.cfg, c.want, err)
		}
	}
	// a program that fails on its own is named
	_, err := Launch(ctx, LaunchConfig{N: 2, Prog: "false"})
	var je *JobError
	if !errors.As(err, &je) || !strings.Contains(err.Error(), "exited with status 1") {
		t.Fatalf("false: %v", err)
	}
}

// TestAbortReachesLauncher: an Abort makes the job fail with status 1 and
// its reason even if every process exits 0; GlobalExit's status is the
// job's, and the other PEs are ended.
func TestAbortReachesLauncher(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr+"/abort", func(t *testing.T) {
			out, _, _, err := launchWorker(t, "abort", 2, tr, nil)
			var je *JobError
			if !errors.As(err, &je) {
				t.Fatalf("want a JobError, got %v\n%s", err, out)
			}
			if je.ExitStatus() != 1 || je.Culprit() != 1 || !strings.Contains(err.Error(), "PE 1 aborted: input is corrupt") {
				t.Errorf("status %d culprit %d: %v\n%s", je.ExitStatus(), je.Culprit(), err, out)
			}
		})
		t.Run(tr+"/global_exit", func(t *testing.T) {
			out, res, took, err := launchWorker(t, "gexit", 3, tr, nil)
			var je *JobError
			if !errors.As(err, &je) {
				t.Fatalf("want a JobError, got %v\n%s", err, out)
			}
			if je.ExitStatus() != 7 || !strings.Contains(err.Error(), "PE 1 called GlobalExit(7)") {
				t.Errorf("status %d: %v\n%s", je.ExitStatus(), err, out)
			}
			for _, r := range res {
				if r.PE != 1 && !r.Failed() {
					t.Errorf("PE %d went on after GlobalExit: %s", r.PE, r)
				}
			}
			// the grace period (4 s) is not waited for
			if took > 3*time.Second {
				t.Errorf("took %v", took)
			}
		})
	}
}

// The launcher tells the others of the failure that made a PE give up, not
// of that PE's exit, whatever order it learns of the two ends in (PE 2 once
// named PE 0, which had exited because PE 1 died, when the launcher saw PE
// 0's exit first: TestFaults/tcp/die under load).
func TestLauncherNamesTheCause(t *testing.T) {
	dir := t.TempDir()
	l := &launcher{cfg: LaunchConfig{N: 4}, base: Config{Dir: dir}, results: make([]ProcResult, 4)}
	for i := range l.results {
		l.results[i].PE, l.results[i].Pid = i, 100+i
	}
	// PE 0 gave up on PE 1, which gave up on PE 3 (still running: its
	// reported reason is all there is); PE 2 failed by itself.
	if err := os.WriteFile(filepath.Join(dir, ReportFile), []byte("0 1 connection lost\n1 3 silent for 3s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pe     int
		wantPE int
		want   string
	}{
		{0, 3, "silent for 3s"},
		{1, 3, "silent for 3s"},
		{2, 2, "exited with status 7"},
	} {
		if pe, why := l.cause(c.pe, "exited with status 7"); pe != c.wantPE || why != c.want {
			t.Errorf("cause of PE %d: PE %d %q, want PE %d %q", c.pe, pe, why, c.wantPE, c.want)
		}
	}
	// once the launcher has PE 3's own end, that is what it says
	l.results[3].Signal, l.results[3].ExitCode = "SIGKILL", -1
	if pe, why := l.cause(0, "exited with status 3"); pe != 3 || why != "(pid 103) was killed by SIGKILL" {
		t.Errorf("cause of PE 0 after PE 3 was killed: PE %d %q", pe, why)
	}
	// reports that name each other end the walk
	if err := os.WriteFile(filepath.Join(dir, ReportFile), []byte("0 1 x\n1 0 y\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if pe, why := l.cause(0, "exited with status 3"); pe != 1 || why != "x" {
		t.Errorf("cause of PE 0 with a cycle of reports: PE %d %q", pe, why)
	}
}
