package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/icn-hpc/icn/internal/par"
)

// Routing algorithm names accepted in Config.Routing; the registry in
// behaviour.go (Routings, RoutingChoices) says what each one does.
const (
	RouteDOR      = "dor"
	RouteDirbit   = "dirbit"
	RouteAdaptive = "adaptive"
	RouteTable    = "table"
	RouteMinhop   = "minhop"
	RouteUpDown   = "updown"
	RouteValiant  = "valiant"
	RouteUGAL     = "ugal"
)

// Switching modes.
const (
	Wormhole = "wormhole" // flits advance as soon as one buffer slot is free
	VCT      = "vct"      // virtual cut-through: a head advances only if the whole packet fits
	SAF      = "saf"      // store-and-forward: VCT that also waits for the tail
)

// Flow-control schemes that keep torus rings deadlock-free.
const (
	Dateline = "dateline" // two VC classes per ring, switched at the wrap link
	Bubble   = "bubble"   // enter a ring only if room for one more maximal packet stays
)

// Dateline class assignments on torus rings (Config.Dateline).
const (
	DatelineBookSim = "booksim" // BookSim's dim_order_torus: class 1 on a whole ring if the packet wraps it, else 0
	DatelineAhead   = "ahead"   // class 0 while the wrap link lies ahead, 1 after it and on rings not wrapped
)

// Router models (Config.Router).
const (
	// RouterLumped delays every flit by RouterDelay cycles in a router;
	// packets queued in one VC overlap their routing and allocation.
	RouterLumped = "lumped"
	// RouterStaged runs route computation, VC allocation, switch
	// allocation and traversal as BookSim's input-queued router does: the
	// next packet of a VC starts routing only after the previous tail has
	// left.
	RouterStaged = "staged"
)

// Stages is the pipeline of the staged router in cycles, named after
// BookSim's routing_delay, vc_alloc_delay, sw_alloc_delay and
// st_final_delay; Speculative overlaps VC and switch allocation.
type Stages struct {
	RC, VA, SA, ST int
	Speculative    bool
}

// ParseStages reads "RC,VA,SA,ST": four whole numbers of cycles in
// 0..100 (Speculative is not part of the text).
func ParseStages(s string) (Stages, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 4 {
		return Stages{}, fmt.Errorf("stages %q: want four cycle counts RC,VA,SA,ST", s)
	}
	var v [4]int
	for i, p := range parts {
		x, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || x < 0 || x > 100 {
			return Stages{}, fmt.Errorf("stages %q: %q is not a whole number of cycles in 0..100", s, p)
		}
		v[i] = x
	}
	return Stages{RC: v[0], VA: v[1], SA: v[2], ST: v[3]}, nil
}

// PartitionWorkers is the Config.Workers a single run of the network
// should use given workers goroutines (0: all cores): partitioned routers
// (one goroutine per core, a barrier per cycle) from 1 024 nodes on;
// smaller networks run serially, where the barrier would cost more than
// it saves.
func PartitionWorkers(n *Network, workers int) int {
	if n.Graph().NumNodes() >= 1024 {
		return par.Workers(workers)
	}
	return 1
}

// BookSimStages is BookSim's default 4-stage router.
var BookSimStages = Stages{RC: 1, VA: 1, SA: 1, ST: 1}

// alloc returns the cycles of VC and switch allocation.
func (s Stages) alloc() int {
	if s.Speculative {
		return max(s.VA, s.SA)
	}
	return s.VA + s.SA
}

// Delay returns the cycles from a head's arrival to its departure without
// contention.
func (s Stages) Delay() int { return s.RC + s.alloc() + s.ST }

// Gap returns the fewest cycles between the departure of a packet's tail
// and that of the next head in the same VC (routing and allocation start
// only when the head reaches the front).
func (s Stages) Gap() int { return max(1, s.RC+s.alloc()) }

// RouterSummary describes the router model in a few words.
func (c *Config) RouterSummary() string {
	var s string
	if c.Router == RouterStaged {
		st := c.Stages
		s = fmt.Sprintf("staged router RC %d, VA %d, SA %d, ST %d", st.RC, st.VA, st.SA, st.ST)
		if st.Speculative {
			s += ", speculative"
		}
	} else {
		s = fmt.Sprintf("lumped router, delay %d", c.RouterDelay)
	}
	s += fmt.Sprintf(", %d-cycle links", c.LinkLatency)
	if c.CreditDelay > 0 {
		s += fmt.Sprintf(", credits %d cycles later", c.CreditDelay)
	}
	if c.TailCredit {
		s += ", VCs freed by the tail's credit"
	}
	if c.InputSpeedup > 1 {
		s += fmt.Sprintf(", input speedup %d", c.InputSpeedup)
	}
	if c.TerminalLinks {
		s += ", 1-cycle injection and ejection channels"
	}
	return s
}

// routerDelay returns the cycles a flit spends in an idle router.
func (c *Config) routerDelay() int {
	if c.Router == RouterStaged {
		return c.Stages.Delay()
	}
	return c.RouterDelay
}

// Injection processes.
const (
	Bernoulli = "bernoulli"
	OnOff     = "onoff"
)

// SizeWeight is one packet size of a mixed-size distribution.
type SizeWeight struct {
	Size   int
	Weight float64
}

// Config describes one simulation. The zero value is not usable; start
// from DefaultConfig.
type Config struct {
	Routing     string // see Routings
	Table       *Table // routing table for RouteTable
	FlowControl string // Dateline or Bubble (torus rings); "" = Dateline
	Dateline    string // dateline class assignment: DatelineBookSim or DatelineAhead; "" = DatelineBookSim
	Switching   string // Wormhole, VCT or SAF
	VCs         int    // virtual channels per physical channel
	Buf         int    // flits per virtual-channel buffer
	RouterDelay int    // lumped router: cycles a flit spends in a router before it may leave (≥ 0)
	// Router is RouterLumped ("" too) or RouterStaged; Stages gives the
	// staged router's pipeline (its RouterDelay is Stages.Delay()).
	Router string
	Stages Stages
	// TerminalLinks adds BookSim's 1-cycle injection and ejection
	// channels between terminals and routers.
	TerminalLinks bool
	LinkLatency   int // cycles on a link (≥ 1); credits take as long back
	// CreditDelay adds cycles to every credit's way back upstream
	// (BookSim's credit_delay): a credit is usable LinkLatency +
	// CreditDelay cycles after its flit left the input buffer.
	CreditDelay int
	// TailCredit keeps an output VC allocated after its packet's tail has
	// left until every credit of the VC, the tail's last, has come back
	// (BookSim's wait_for_tail_credit = 1); false frees it as the tail
	// leaves. Terminals likewise reuse an injection VC only once the
	// tail's credit is back.
	TailCredit bool
	// InputSpeedup gives every input port this many crossbar inputs
	// (BookSim's input_speedup): VC v uses input v mod InputSpeedup, so up
	// to that many flits of one port cross the switch in a cycle, to
	// different outputs. 0 or 1 is one input per port.
	InputSpeedup int

	Traffic     string  // see TrafficPatterns (UsesTrace: replays Trace)
	Hotspots    []int   // hotspot nodes for "hotspot"
	HotspotFrac float64 // share of packets sent to hotspots
	Trace       *Trace  // the trace of a traffic that UsesTrace
	Process     string  // Bernoulli or OnOff
	Burst       float64 // mean on-period in cycles for OnOff
	Rate        float64 // offered load, flits per terminal per cycle, in (0, 1]
	Sizes       []SizeWeight

	Seed           uint64
	Warmup         int // warm-up cycles; 0 = until latency and throughput settle
	Cycles         int // measurement cycles
	SamplePeriod   int // cycles per warm-up convergence sample; 0 = automatic
	MaxWarmup      int // cap on automatic warm-up; 0 = 20 sample periods
	DrainCycles    int // cap on the drain phase; 0 = max(Cycles, 5000)
	DeadlockWindow int // cycles without progress before a VC counts as stalled; 0 = automatic

	// LocalSpeedup lets a terminal inject and eject up to this many flits
	// per cycle (on different virtual channels / ports); 1 models one
	// injection channel, the degree models an all-port node.
	LocalSpeedup int
	// Force runs configurations whose deadlock freedom cannot be shown.
	Force bool
	// Workers > 1 partitions routers over goroutines inside one run (at
	// most one partition per 128 routers; smaller networks run serially,
	// which is faster there). The result does not depend on it.
	Workers int
	// minRoutersPerPart overrides defaultMinRoutersPerPart (tests).
	minRoutersPerPart int
}

// DefaultConfig returns the defaults used by `icn sim`.
func DefaultConfig() Config {
	return Config{
		Routing: RouteDOR, Switching: Wormhole, VCs: 2, Buf: 8, RouterDelay: 1, LinkLatency: 1,
		Traffic: "uniform", Process: Bernoulli, Burst: 32, Rate: 0.1,
		Sizes: []SizeWeight{{Size: 1, Weight: 1}}, Seed: 1, Cycles: 10000, HotspotFrac: 0.2,
		LocalSpeedup: 1,
	}
}

// MaxPacket returns the largest packet size.
func (c *Config) MaxPacket() int {
	m := 0
	for _, s := range c.Sizes {
		m = max(m, s.Size)
	}
	return m
}

// MeanPacket returns the mean packet size.
func (c *Config) MeanPacket() float64 {
	var w, s float64
	for _, x := range c.Sizes {
		w += x.Weight
		s += x.Weight * float64(x.Size)
	}
	if w == 0 {
		return 0
	}
	return s / w
}

// ParseSizes parses a packet-size list: "4", "1,8" (equal weights) or
// "1:0.8,8:0.2" (size:weight).
func ParseSizes(s string) ([]SizeWeight, error) {
	var out []SizeWeight
	for _, tok := range strings.Split(s, ",") {
		tok = strings.TrimSpace(tok)
		if tok == "" {
			continue
		}
		sz, w, hasW := strings.Cut(tok, ":")
		n, err := strconv.Atoi(strings.TrimSpace(sz))
		if err != nil || n < 1 || n > MaxPacketFlits {
			return nil, fmt.Errorf("packet size %q: want a whole number of flits in 1..%d", sz, MaxPacketFlits)
		}
		weight := 1.0
		if hasW {
			weight, err = strconv.ParseFloat(strings.TrimSpace(w), 64)
			if err != nil || !(weight > 0) || math.IsInf(weight, 0) {
				return nil, fmt.Errorf("packet size weight %q: want a positive number", w)
			}
		}
		out = append(out, SizeWeight{Size: n, Weight: weight})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no packet size given")
	}
	return out, nil
}

// MaxPacketFlits bounds the packet size.
const MaxPacketFlits = 1 << 15

// MaxCycles bounds each phase of a run (times are kept as int32).
const MaxCycles = 1 << 27

// check validates the parts of the configuration that do not depend on the
// network.
func (c *Config) check(needRate bool) error {
	for _, step := range []func() error{
		c.checkModes,
		c.checkRouter,
		c.checkPackets,
		func() error { return c.checkInjection(needRate) },
		c.checkRunLengths,
	} {
		if err := step(); err != nil {
			return err
		}
	}
	if c.HotspotFrac < 0 || c.HotspotFrac > 1 || math.IsNaN(c.HotspotFrac) {
		return fmt.Errorf("hotspot fraction %g out of range 0..1", c.HotspotFrac)
	}
	return nil
}

// checkModes validates the switching, flow-control and dateline names.
func (c *Config) checkModes() error {
	switch c.Switching {
	case Wormhole, VCT, SAF:
	default:
		return fmt.Errorf("unknown switching %q (want wormhole, vct or saf)", c.Switching)
	}
	switch c.FlowControl {
	case "", Dateline, Bubble:
	default:
		return fmt.Errorf("unknown flow control %q (want dateline or bubble)", c.FlowControl)
	}
	switch c.Dateline {
	case "", DatelineBookSim, DatelineAhead:
	default:
		return fmt.Errorf("unknown dateline rule %q (want booksim or ahead)", c.Dateline)
	}
	return nil
}

// checkRouter validates the router: VCs, buffers, delays, the router model
// and its stages, and the link latency.
func (c *Config) checkRouter() error {
	if c.VCs < 1 || c.VCs > 64 {
		return fmt.Errorf("--vcs %d out of range 1..64", c.VCs)
	}
	if c.Buf < 1 || c.Buf > 1<<20 {
		return fmt.Errorf("--buf %d out of range 1..%d", c.Buf, 1<<20)
	}
	if c.RouterDelay < 0 || c.RouterDelay > 1000 {
		return fmt.Errorf("router delay %d out of range 0..1000", c.RouterDelay)
	}
	switch c.Router {
	case "", RouterLumped:
	case RouterStaged:
		st := c.Stages
		if st.RC < 0 || st.VA < 0 || st.SA < 0 || st.ST < 0 || st.RC > 100 || st.VA > 100 || st.SA > 100 || st.ST > 100 {
			return fmt.Errorf("router stages %d/%d/%d/%d out of range 0..100", st.RC, st.VA, st.SA, st.ST)
		}
	default:
		return fmt.Errorf("unknown router model %q (want lumped or staged)", c.Router)
	}
	if c.LinkLatency < 1 || c.LinkLatency > 1000 {
		return fmt.Errorf("link latency %d out of range 1..1000", c.LinkLatency)
	}
	if c.CreditDelay < 0 || c.CreditDelay > 1000 {
		return fmt.Errorf("credit delay %d out of range 0..1000", c.CreditDelay)
	}
	if c.InputSpeedup < 0 || c.InputSpeedup > 64 {
		return fmt.Errorf("input speedup %d out of range 1..64", c.InputSpeedup)
	}
	if c.InputSpeedup > 1 && c.LocalSpeedup > 1 {
		return fmt.Errorf("input speedup %d and local speedup %d: at most one of them may exceed 1", c.InputSpeedup, c.LocalSpeedup)
	}
	return nil
}

// checkPackets validates the packet-size mix and that buffers hold the
// whole packets that VCT, SAF and bubble flow control need.
func (c *Config) checkPackets() error {
	if len(c.Sizes) == 0 {
		return fmt.Errorf("no packet size given")
	}
	for _, s := range c.Sizes {
		if s.Size < 1 || s.Size > MaxPacketFlits || !(s.Weight > 0) {
			return fmt.Errorf("bad packet size %d:%g", s.Size, s.Weight)
		}
	}
	maxP := c.MaxPacket()
	if c.Switching != Wormhole && c.Buf < maxP {
		return fmt.Errorf("%s switching needs buffers of at least one maximal packet: --buf %d < packet size %d", c.Switching, c.Buf, maxP)
	}
	if c.FlowControl == Bubble {
		if c.Switching == Wormhole {
			return fmt.Errorf("bubble flow control needs whole packets in a buffer: use --switching vct (or saf)")
		}
		if c.Buf < 2*maxP {
			return fmt.Errorf("bubble flow control needs buffers of two maximal packets: --buf %d < 2×%d", c.Buf, maxP)
		}
	}
	return nil
}

// checkInjection validates the injection rate (when one is needed) and the
// injection process.
func (c *Config) checkInjection(needRate bool) error {
	if needRate {
		if math.IsNaN(c.Rate) || c.Rate <= 0 || c.Rate > 1 {
			return fmt.Errorf("injection rate %g out of range: want 0 < rate ≤ 1 flits/node/cycle", c.Rate)
		}
	}
	switch c.Process {
	case Bernoulli:
	case OnOff:
		if !(c.Burst >= 1) || c.Burst > 1e9 {
			return fmt.Errorf("--burst %g: want a mean on-period of at least 1 cycle", c.Burst)
		}
	default:
		return fmt.Errorf("unknown injection process %q (want bernoulli or onoff)", c.Process)
	}
	return nil
}

// checkRunLengths validates the measurement, warm-up and drain periods and
// the local speedup.
func (c *Config) checkRunLengths() error {
	if c.Cycles < 1 || c.Cycles > MaxCycles {
		return fmt.Errorf("--cycles %d out of range 1..%d", c.Cycles, MaxCycles)
	}
	if c.Warmup < 0 || c.Warmup > MaxCycles {
		return fmt.Errorf("--warmup %d out of range 0..%d", c.Warmup, MaxCycles)
	}
	if c.DrainCycles < 0 || c.DrainCycles > MaxCycles || c.SamplePeriod < 0 || c.SamplePeriod > MaxCycles || c.MaxWarmup < 0 || c.MaxWarmup > 1000 {
		return fmt.Errorf("drain, sample period or warm-up periods out of range")
	}
	if c.LocalSpeedup < 1 || c.LocalSpeedup > 64 {
		return fmt.Errorf("local speedup %d out of range 1..64", c.LocalSpeedup)
	}
	return nil
}
