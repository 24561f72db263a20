package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/icn-hpc/icn/collective"
	"github.com/icn-hpc/icn/internal/cli"
	"github.com/icn-hpc/icn/shmem"
	"github.com/spf13/cobra"
)

// shmemFlags are the job options shared by run and bench.
type shmemFlags struct {
	heap      string
	ring      string
	timeout   time.Duration
	transport string
	bind      string
}

func (f *shmemFlags) register(c *cobra.Command, transportHelp string) {
	c.Flags().StringVar(&f.heap, "heap", "64M", "local portion per process (bytes, K/M/G suffixes)")
	c.Flags().StringVar(&f.ring, "ring", "256K", "two-sided receive ring per sender")
	c.Flags().DurationVar(&f.timeout, "timeout", shmem.DefaultTimeout, "fault detection bound: a dead or silent process is reported within this time")
	c.Flags().StringVar(&f.bind, "bind", shmem.DefaultBind, "process binding, as mpirun's --bind-to: core (PE i of a host on its CPU i mod CPUs), none, or auto (core on shm, none on tcp)")
	if transportHelp != "" {
		c.Flags().StringVar(&f.transport, "transport", "", transportHelp)
	}
}

func (f *shmemFlags) options() (shmem.Options, error) {
	heap, err := shmem.ParseSize(f.heap)
	if err != nil {
		return shmem.Options{}, fmt.Errorf("--heap: %w", err)
	}
	ring, err := shmem.ParseSize(f.ring)
	if err != nil {
		return shmem.Options{}, fmt.Errorf("--ring: %w", err)
	}
	if f.timeout <= 0 {
		return shmem.Options{}, fmt.Errorf("--timeout must be positive")
	}
	switch f.bind {
	case shmem.BindAuto, shmem.BindCore, shmem.BindNone:
	default:
		return shmem.Options{}, fmt.Errorf("--bind: unknown binding %q (want auto, core or none)", f.bind)
	}
	return shmem.Options{Heap: heap, Ring: ring, Timeout: f.timeout, Bind: f.bind}, nil
}

// newShmemCmd is the icn shmem group: run, bench and the hidden
// bench-worker.
func newShmemCmd() *cobra.Command {
	group := &cobra.Command{
		Use:   "shmem",
		Short: "One-sided communication (MVS-Express shmem model): launcher and benchmarks",
	}
	group.AddCommand(newShmemRunCmd(), newShmemBenchCmd(), newShmemBenchWorkerCmd())
	return group
}

// shmemRunOptions are the flags of icn shmem run.
type shmemRunOptions struct {
	np    int
	hosts string
	label bool
	job   shmemFlags
}

func newShmemRunCmd() *cobra.Command {
	var o shmemRunOptions
	run := &cobra.Command{
		Use:   "run -n N [--hosts h1,h2] PROG [ARGS...]",
		Short: "Start N processes of a shmem program wired into one job",
		Long: `Start N processes of PROG, numbered 0..N-1, and wire them together: over
shared memory when all run on this host (default), over TCP with --hosts
(processes placed round robin; local and loopback hosts are started directly,
others through ssh). Exits non-zero naming the process that failed: 1, or the
status a PE gave GlobalExit.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runShmemRun(ctx, o, args, os.Stdout, os.Stderr)
		},
	}
	run.Flags().IntVarP(&o.np, "np", "n", 1, "number of processes")
	run.Flags().StringVar(&o.hosts, "hosts", "", "comma-separated hosts (implies --transport tcp)")
	run.Flags().BoolVar(&o.label, "label", false, "prefix every output line with [PE]")
	o.job.register(run, "shm (one host) or tcp; default shm, or tcp with --hosts")
	run.Flags().SetInterspersed(false)
	return run
}

// runShmemRun launches args[0] with the arguments args[1:]; the PEs write
// to stdout and stderr. A failed job is an *exitError with the job's
// status.
func runShmemRun(ctx context.Context, o shmemRunOptions, args []string, stdout, stderr io.Writer) error {
	opt, err := o.job.options()
	if err != nil {
		return &exitError{2, err}
	}
	opt.Transport = o.job.transport
	var hl []string
	if o.hosts != "" {
		hl = strings.Split(o.hosts, ",")
	}
	_, err = shmem.Launch(ctx, shmem.LaunchConfig{
		N: o.np, Hosts: hl, Prog: args[0], Args: args[1:], Options: opt,
		Stdout: stdout, Stderr: stderr, Label: o.label,
	})
	var je *shmem.JobError
	if errors.As(err, &je) {
		return &exitError{je.ExitStatus(), err}
	}
	if err != nil {
		return &exitError{2, err}
	}
	return nil
}

// shmemBenchOptions are the flags of icn shmem bench (and, for the
// worker, the subset it is given).
type shmemBenchOptions struct {
	out        output
	np         int
	transports string
	sizes      string
	latSizes   string
	tests      string
	dur        time.Duration
	job        shmemFlags
	oshmem     bool
}

func newShmemBenchCmd() *cobra.Command {
	var o shmemBenchOptions
	bench := &cobra.Command{
		Use:   "bench",
		Short: "Message Rate, latency, atomics, barriers, overlap and collectives, one-sided vs two-sided",
		Long: `Run the seed's Message Rate test (one process streams puts of 8 B … 1 MiB to
another; also non-blocking puts and gets in windows of 64 completed by Quiet),
ping-pong latency and blocking get latency, remote atomic rate, barrier
latency over 2..N processes, the overlap of a 1 MiB non-blocking transfer
with computation, and the collectives (broadcast, reduce, fcollect,
alltoall) over N processes with the tree and linear algorithms next to seed
002's cost formulas (ts and tw fitted from the point-to-point rows). Each
point-to-point test also runs with two-sided Send/Recv over the same
transport, as real processes started by the launcher. Prints the rows and
compares the single-word put rate with MVS-Express (> 10 M/s).`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runShmemBench(ctx, o, stdout(c))
		},
	}
	bench.Flags().IntVarP(&o.np, "np", "n", 4, "processes (barriers are measured for 2..np)")
	bench.Flags().StringVar(&o.transports, "transport", "shm,tcp", "transports to measure, comma-separated")
	bench.Flags().StringVar(&o.sizes, "sizes", "", "Message Rate sizes (default 8,16,…,1M)")
	bench.Flags().StringVar(&o.latSizes, "latency-sizes", "", "ping-pong sizes (default 8,64,…,1M)")
	bench.Flags().StringVar(&o.tests, "tests", strings.Join(shmem.BenchTests, ","), "tests to run")
	bench.Flags().DurationVar(&o.dur, "time", 100*time.Millisecond, "target duration of one measurement")
	bench.Flags().BoolVar(&o.oshmem, "oshmem", false, "also run the headline rows over OpenSHMEM (Open MPI's oshcc/oshrun, 2 PEs) in the same run")
	o.job.register(bench, "")
	o.out.register(bench)
	return bench
}

// runShmemBench launches the benchmark workers over every transport (and
// OSHMEM with --oshmem) and prints the rows to w.
func runShmemBench(ctx context.Context, o shmemBenchOptions, w io.Writer) error {
	opt, err := o.job.options()
	if err != nil {
		return &exitError{2, err}
	}
	if o.np < 2 {
		return &exitError{2, fmt.Errorf("--np must be at least 2")}
	}
	wargs, maxSize, err := benchWorkerArgs(o.sizes, o.latSizes, o.tests, o.dur)
	if err != nil {
		return &exitError{2, err}
	}
	opt.Heap = max(opt.Heap, maxSize+(1<<20))
	trs, err := shmemBenchTransports(o.transports)
	if err != nil {
		return &exitError{2, err}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	prog := cli.NewProgress(len(trs), "shmem bench", o.out.json)
	var rows []shmem.BenchRow
	for _, tr := range trs {
		r, err := shmemBenchOver(ctx, tr, opt, o.np, self, wargs)
		if err != nil {
			return err
		}
		rows = append(rows, withCollectiveModels(r)...)
		prog.Add(1)
	}
	if o.oshmem {
		r, err := runOSHMEMBench(ctx, o.dur, o.tests, opt.Bind)
		if err != nil {
			return fmt.Errorf("--oshmem: %w", err)
		}
		rows = append(rows, r...)
	}
	prog.Done()
	rows = append(rows, shmem.SeedReference()...)
	return o.out.print(w, rows, func(w io.Writer) error { return benchTable(w, rows) })
}

// shmemBenchTransports reads --transport.
func shmemBenchTransports(list string) ([]string, error) {
	var trs []string
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimSpace(t)
		if t != shmem.TransportShm && t != shmem.TransportTCP {
			return nil, fmt.Errorf("--transport: unknown transport %q (want shm, tcp)", t)
		}
		trs = append(trs, t)
	}
	return trs, nil
}

// shmemBenchOver runs the workers as one job over transport tr and reads PE
// 0's rows.
func shmemBenchOver(ctx context.Context, tr string, opt shmem.Options, np int, self string, wargs []string) ([]shmem.BenchRow, error) {
	opt.Transport = tr
	var buf bytes.Buffer
	_, err := shmem.Launch(ctx, shmem.LaunchConfig{
		N: np, Prog: self, Args: wargs, Options: opt, Stdout: &buf, Stderr: os.Stderr,
	})
	if err != nil {
		return nil, fmt.Errorf("bench over %s: %w", tr, err)
	}
	r, err := parseBenchOutput(buf.String())
	if err != nil {
		return nil, fmt.Errorf("bench over %s: %w", tr, err)
	}
	return r, nil
}

// newShmemBenchWorkerCmd is one PE of bench (started by bench itself).
func newShmemBenchWorkerCmd() *cobra.Command {
	var o shmemBenchOptions
	worker := &cobra.Command{
		Use:    "bench-worker",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runShmemBenchWorker(o, c.OutOrStdout())
		},
	}
	worker.Flags().StringVar(&o.sizes, "sizes", "", "")
	worker.Flags().StringVar(&o.latSizes, "latency-sizes", "", "")
	worker.Flags().StringVar(&o.tests, "tests", "", "")
	worker.Flags().DurationVar(&o.dur, "time", 100*time.Millisecond, "")
	return worker
}

// runShmemBenchWorker joins the job, runs the benchmark and prints PE 0's
// rows as one prefixed JSON line.
func runShmemBenchWorker(o shmemBenchOptions, w io.Writer) error {
	cfg, err := benchConfig(o.sizes, o.latSizes, o.tests, o.dur)
	if err != nil {
		return err
	}
	if err := shmem.Init(); err != nil {
		return err
	}
	rows, err := shmem.RunBench(shmem.Default(), cfg)
	if err != nil {
		return err
	}
	if shmem.MyPE() == 0 {
		b, _ := json.Marshal(rows)
		fmt.Fprintf(w, "%s%s\n", benchPrefix, b)
	}
	return shmem.Finalize()
}

const benchPrefix = "ICNBENCH "

func benchConfig(sizes, latSizes, tests string, dur time.Duration) (shmem.BenchConfig, error) {
	cfg := shmem.BenchConfig{Duration: dur}
	var err error
	if sizes != "" {
		if cfg.RateSizes, err = shmem.ParseSizes(sizes); err != nil {
			return cfg, fmt.Errorf("--sizes: %w", err)
		}
	}
	if latSizes != "" {
		if cfg.LatencySizes, err = shmem.ParseSizes(latSizes); err != nil {
			return cfg, fmt.Errorf("--latency-sizes: %w", err)
		}
	}
	for _, t := range strings.Split(tests, ",") {
		switch t = strings.TrimSpace(t); {
		case t == "":
		case slices.Contains(shmem.BenchTests, t):
			cfg.Tests = append(cfg.Tests, t)
		default:
			return cfg, fmt.Errorf("--tests: unknown test %q (want %s)", t, strings.Join(shmem.BenchTests, ", "))
		}
	}
	if dur <= 0 || dur > time.Minute {
		return cfg, fmt.Errorf("--time %v out of range (0, 1m]", dur)
	}
	for _, s := range append(append([]int{}, cfg.RateSizes...), cfg.LatencySizes...) {
		if s > 64<<20 {
			return cfg, fmt.Errorf("message size %d larger than 64 MiB", s)
		}
	}
	return cfg, nil
}

// benchWorkerArgs validates the bench flags and renders the worker's
// command line; it also returns the largest message size.
func benchWorkerArgs(sizes, latSizes, tests string, dur time.Duration) ([]string, int, error) {
	cfg, err := benchConfig(sizes, latSizes, tests, dur)
	if err != nil {
		return nil, 0, err
	}
	maxSize := 1 << 20
	for _, s := range append(append([]int{}, cfg.RateSizes...), cfg.LatencySizes...) {
		maxSize = max(maxSize, s)
	}
	return []string{"shmem", "bench-worker", "--sizes", sizes, "--latency-sizes", latSizes,
		"--tests", tests, "--time", dur.String()}, maxSize, nil
}

func parseBenchOutput(s string) ([]shmem.BenchRow, error) {
	for _, line := range strings.Split(s, "\n") {
		if rest, ok := strings.CutPrefix(line, benchPrefix); ok {
			var rows []shmem.BenchRow
			if err := json.Unmarshal([]byte(rest), &rows); err != nil {
				return nil, fmt.Errorf("reading the results: %w", err)
			}
			return rows, nil
		}
	}
	return nil, errors.New("PE 0 printed no results")
}

func benchTable(w io.Writer, rows []shmem.BenchRow) error {
	t := cli.NewTable("test", "api", "transport", "procs", "size", "msgs/s", "MB/s", "latency µs", "× two-sided", "notes")
	for _, r := range rows {
		ratio := "-"
		if r.RatioVsTwoSided > 0 {
			ratio = fmt.Sprintf("%.2f", r.RatioVsTwoSided)
		}
		t.Row(r.Test, r.API, r.Transport, r.Procs, r.Size, fmt.Sprintf("%.4g", r.MsgsPerSec),
			fmt.Sprintf("%.4g", r.BytesPerSec/1e6), fmt.Sprintf("%.4g", r.LatencyUs), ratio, shmemBenchNotes(r))
	}
	if err := t.Write(w); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "× two-sided: one-sided speed / send-receive speed over the same transport (message rate: msgs/s ratio; latency: two-sided latency / one-sided latency).")
	ref := shmem.SeedReference()[0]
	for _, r := range rows {
		if r.Test == "message_rate" && r.Size == 8 && (r.API == "put" || r.API == "put_ptr") {
			fmt.Fprintf(w, "%s %s of single words: %.3g M writes/s (%.3g ns each) = %.2f× the MVS-Express reference of > 10 M/s (70–80 ns).\n",
				r.Transport, r.API, r.MsgsPerSec/1e6, 1e3/r.MsgsPerSec*1e6, r.MsgsPerSec/ref.MsgsPerSec)
		}
		if r.Test == "latency" && r.Size == 8 && r.API == "put" {
			fmt.Fprintf(w, "%s one-way latency of a single-word put: %.3g µs (MVS-Express: a little over 1 µs).\n", r.Transport, r.LatencyUs)
		}
		if r.Test == "oshmem" {
			for _, tr := range []string{shmem.TransportShm, shmem.TransportTCP} {
				if p, ok := oshmemPeer(rows, r, tr); ok && r.LatencyUs > 0 {
					fmt.Fprintf(w, "%s %s %d B: icn %s %.3g µs, OSHMEM %.3g µs per operation (icn/OSHMEM time %.2f×).\n",
						p.Test, r.API, r.Size, tr, p.LatencyUs, r.LatencyUs, p.LatencyUs/r.LatencyUs)
				}
			}
		}
	}
	return nil
}

// shmemBenchNotes is the last column: the algorithm and model of collective
// rows, the overlap of overlap rows.
func shmemBenchNotes(r shmem.BenchRow) string {
	switch {
	case r.Algorithm != "" && r.ModelUs > 0:
		return fmt.Sprintf("%s; model %.3g µs (%s)", r.Algorithm, r.ModelUs, r.Model)
	case r.Algorithm != "":
		return r.Algorithm
	case r.Test == "overlap":
		return fmt.Sprintf("overlap %.0f%%", 100*r.Overlap)
	}
	return ""
}

// shmemCollectiveOps maps the collective rows to seed 002's operations: an
// all-reduce is a reduction followed by a broadcast.
var shmemCollectiveOps = map[string][]string{
	"broadcast": {"bcast"}, "reduce": {"reduce", "bcast"}, "fcollect": {"allgather"}, "alltoall": {"alltoall"},
}

// withCollectiveModels fills in seed 002's cost of every collective row of
// one transport (collective.PEModel): ts is the one-way latency of an
// 8-byte put, tw the time per byte of the largest put rate row.
func withCollectiveModels(rows []shmem.BenchRow) []shmem.BenchRow {
	var ts, tw float64
	best := 0
	for _, r := range rows {
		if r.Test == "latency" && r.API == "put" && r.Size == 8 {
			ts = r.LatencyUs
		}
		if r.Test == "message_rate" && r.API == "put" && r.Size > best && r.BytesPerSec > 0 {
			best, tw = r.Size, 1e6/r.BytesPerSec
		}
	}
	if ts <= 0 || tw <= 0 {
		return rows
	}
	for i, r := range rows {
		if r.Test != "collective" {
			continue
		}
		if t, model, ok := collective.PEModel(r.Procs, shmemCollectiveOps[r.API], ts, tw, r.Size); ok {
			rows[i].ModelUs, rows[i].Model = t, model
		}
	}
	return rows
}

// runOSHMEMBench compiles shmem.OSHMEMBenchSource with oshcc, runs the
// rows of the chosen tests on 2 PEs with oshrun, bound as icn's shm PEs
// are (--bind-to core for auto and core, which is also mpirun's default
// for 2 processes; none), and returns its rows (test "oshmem"). OSHMEM
// may crash in shmem_finalize after printing every row; that is tolerated.
func runOSHMEMBench(ctx context.Context, dur time.Duration, tests, bind string) ([]shmem.BenchRow, error) {
	want := 0
	for _, t := range strings.Split(tests, ",") {
		want += shmem.OSHMEMRows[strings.TrimSpace(t)]
	}
	if want == 0 {
		return nil, nil
	}
	cc, err1 := exec.LookPath("oshcc")
	run, err2 := exec.LookPath("oshrun")
	if err1 != nil || err2 != nil {
		return nil, errors.New("oshcc and oshrun not found (Debian: apt-get install openmpi-bin libopenmpi-dev)")
	}
	dir, err := os.MkdirTemp("", "icn-oshmem-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	src, prog := filepath.Join(dir, "bench.c"), filepath.Join(dir, "bench")
	if err := os.WriteFile(src, []byte(shmem.OSHMEMBenchSource), 0o600); err != nil {
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, cc, "-O2", src, "-o", prog).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("oshcc: %v\n%s", err, out)
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, run, oshrunArgs(prog, dur, tests, bind)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	rows := parseOSHMEMOutput(out.String())
	if len(rows) < want {
		return nil, fmt.Errorf("oshrun printed %d of %d rows (%v):\n%s", len(rows), want, runErr, out.String())
	}
	for i := range rows {
		rows[i].Bind = oshmemBind(bind)
	}
	return rows, nil
}

// oshmemBind is OSHMEM's binding for icn's --bind: none or core.
func oshmemBind(bind string) string {
	if bind == shmem.BindNone {
		return shmem.BindNone
	}
	return shmem.BindCore
}

// oshrunArgs is the command line of oshrun for the OSHMEM benchmark.
func oshrunArgs(prog string, dur time.Duration, tests, bind string) []string {
	var args []string
	if os.Geteuid() == 0 {
		args = append(args, "--allow-run-as-root")
	}
	if runtime.NumCPU() < 2 {
		args = append(args, "--oversubscribe")
	}
	args = append(args, "--bind-to", oshmemBind(bind))
	return append(args, "-np", "2", prog, strconv.FormatFloat(dur.Seconds(), 'g', -1, 64), tests)
}

// parseOSHMEMOutput reads the "ICNOSH api size count seconds" lines.
func parseOSHMEMOutput(s string) []shmem.BenchRow {
	var rows []shmem.BenchRow
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) != 5 || f[0] != "ICNOSH" {
			continue
		}
		size, err1 := strconv.Atoi(f[2])
		count, err2 := strconv.ParseInt(f[3], 10, 64)
		secs, err3 := strconv.ParseFloat(f[4], 64)
		if err1 != nil || err2 != nil || err3 != nil || count <= 0 || secs <= 0 {
			continue
		}
		r := shmem.BenchRow{Test: "oshmem", API: f[1], Transport: "oshmem", Procs: 2, Size: size, Count: count}
		r.MsgsPerSec = float64(count) / secs
		r.BytesPerSec = r.MsgsPerSec * float64(size)
		r.LatencyUs = secs / float64(count) * 1e6
		rows = append(rows, r)
	}
	return rows
}

// oshmemPeer finds the icn row an OSHMEM row is compared with.
func oshmemPeer(rows []shmem.BenchRow, o shmem.BenchRow, transport string) (shmem.BenchRow, bool) {
	test := map[string]string{"put": "message_rate", "put_nbi": "message_rate", "get": "latency",
		"fetch_add": "atomic_rate", "barrier": "barrier", "broadcast": "collective", "reduce": "collective", "alltoall": "collective"}[o.API]
	for _, r := range rows {
		if r.Test == test && r.API == o.API && r.Transport == transport && r.Size == o.Size && r.Procs == o.Procs &&
			(r.Algorithm == "" || r.Algorithm == "tree" || o.API == "alltoall") {
			return r, true
		}
	}
	return shmem.BenchRow{}, false
}
