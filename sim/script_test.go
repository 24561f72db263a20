package sim

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/icn-hpc/icn/topology"
)

// TestScripts runs the scripted cases in testdata/scripts: small networks
// driven packet by packet through Tick, with latencies derived by hand
// from the timing model (router delay, link latency, credits, switching)
// written next to every expectation.
//
// Commands:
//
//	net key=value …        build a network (topo, routing, switching, vcs, buf,
//	                       rd, ll, fc, maxpacket, table, fail-links, force)
//	send NAME SRC DST SIZE [at=CYCLE]
//	run [max=CYCLES]       tick until every send is delivered
//	load RATE CYCLES       a full run with synthetic uniform traffic
//	expect NAME LATENCY    NAME arrived LATENCY cycles after it was sent
//	expect deadlock | no-deadlock | conserved | error TEXT
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/scripts/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runScript(t, f) })
	}
}

type scriptSend struct {
	name     string
	src, dst int
	size     int
	at       int64
	done     int64
}

func runScript(t *testing.T, path string) {
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var (
		g       *topology.Graph
		n       *Network
		cfg     Config
		netErr  error
		sends   []*scriptSend
		runErr  error
		core    *Core
		byName  = map[string]*scriptSend{}
		lineNum int
	)
	fail := func(format string, a ...any) {
		t.Helper()
		t.Fatalf("%s:%d: "+format, append([]any{path, lineNum}, a...)...)
	}
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		lineNum++
		line := sc.Text()
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "net":
			cfg = DefaultConfig()
			cfg.Rate = 0
			spec, failLinks := "", ""
			for _, kv := range f[1:] {
				k, v, _ := strings.Cut(kv, "=")
				atoi := func() int {
					x, err := strconv.Atoi(v)
					if err != nil {
						fail("%s: %v", kv, err)
					}
					return x
				}
				switch k {
				case "topo":
					spec = v
				case "routing":
					cfg.Routing = v
				case "switching":
					cfg.Switching = v
				case "fc":
					cfg.FlowControl = v
				case "vcs":
					cfg.VCs = atoi()
				case "buf":
					cfg.Buf = atoi()
				case "rd":
					cfg.RouterDelay = atoi()
				case "ll":
					cfg.LinkLatency = atoi()
				case "maxpacket":
					cfg.Sizes = []SizeWeight{{Size: atoi(), Weight: 1}}
				case "table":
					data, err := os.ReadFile(filepath.Join(filepath.Dir(path), v))
					if err != nil {
						fail("%v", err)
					}
					if cfg.Table, err = ParseTable(data); err != nil {
						fail("%v", err)
					}
				case "fail-links":
					failLinks = v
				case "force":
					cfg.Force = true
				default:
					fail("unknown net key %q", k)
				}
			}
			if g, err = topology.Parse(spec); err != nil {
				fail("%v", err)
			}
			if failLinks != "" {
				if g, err = g.ApplyFaults(failLinks, ""); err != nil {
					fail("%v", err)
				}
			}
			n, netErr = NewNetwork(g, cfg, false)
			core, sends, runErr = nil, nil, nil
			byName = map[string]*scriptSend{}
		case "send":
			if len(f) < 5 || n == nil {
				fail("send NAME SRC DST SIZE [at=CYCLE] after a working net")
			}
			s := &scriptSend{name: f[1], done: -1}
			for i, name := range f[2:4] {
				v := g.NodeByName(name)
				if v < 0 || n.termOf[v] < 0 {
					fail("%q is not a terminal", name)
				}
				if i == 0 {
					s.src = int(n.termOf[v])
				} else {
					s.dst = int(n.termOf[v])
				}
			}
			s.size, _ = strconv.Atoi(f[4])
			if len(f) > 5 {
				at, _ := strings.CutPrefix(f[5], "at=")
				x, err := strconv.Atoi(at)
				if err != nil {
					fail("%v", err)
				}
				s.at = int64(x)
			}
			sends = append(sends, s)
			byName[s.name] = s
		case "run":
			if netErr != nil {
				fail("net failed: %v", netErr)
			}
			maxC := int64(10000)
			if len(f) > 1 {
				x, _ := strconv.Atoi(strings.TrimPrefix(f[1], "max="))
				maxC = int64(x)
			}
			if core == nil {
				if core, err = NewCore(n, cfg); err != nil {
					fail("%v", err)
				}
				core.LogDeliveries(true)
			}
			var dl []Delivery
			for left := len(sends); left > 0 && core.Now() < maxC && core.Deadlock() == nil; {
				for i, s := range sends {
					if s.at == core.Now() {
						if err := core.Send(s.src, s.dst, s.size, int32(i)); err != nil {
							fail("%v", err)
						}
					}
				}
				core.Tick()
				dl = core.TakeDeliveries(dl[:0])
				for _, d := range dl {
					sends[d.Tag].done = d.At
					left--
				}
			}
			if err := core.CheckConservation(); err != nil {
				fail("%v", err)
			}
		case "load":
			if netErr != nil {
				fail("net failed: %v", netErr)
			}
			rate, _ := strconv.ParseFloat(f[1], 64)
			cyc, _ := strconv.Atoi(f[2])
			c := cfg
			c.Rate, c.Cycles, c.Warmup = rate, cyc, 1
			_, runErr = Run(n, c)
		case "expect":
			if len(f) < 2 {
				fail("expect what?")
			}
			switch f[1] {
			case "error":
				want := strings.Join(f[2:], " ")
				if netErr == nil || !strings.Contains(netErr.Error(), want) {
					fail("want an error containing %q, got %v", want, netErr)
				}
			case "deadlock", "no-deadlock":
				var de *DeadlockError
				got := errors.As(runErr, &de)
				if runErr != nil && !got {
					fail("run failed: %v", runErr)
				}
				if got != (f[1] == "deadlock") {
					fail("deadlock = %v (%v), want %s", got, runErr, f[1])
				}
			case "conserved":
				if runErr != nil {
					var de *DeadlockError
					if !errors.As(runErr, &de) {
						fail("%v", runErr)
					}
				}
			default:
				s := byName[f[1]]
				if s == nil || len(f) != 3 {
					fail("expect NAME LATENCY with a known NAME")
				}
				want, _ := strconv.Atoi(f[2])
				if s.done < 0 {
					fail("%s was not delivered", s.name)
				}
				if got := s.done - s.at; got != int64(want) {
					fail("%s: latency %d, want %d", s.name, got, want)
				}
			}
		default:
			fail("unknown command %q", f[0])
		}
	}
}
