package sim

import (
	"fmt"
	"testing"
)

// quietCore returns a core on spec with no synthetic traffic.
func quietCore(t *testing.T, spec string, cfg Config) *Core {
	t.Helper()
	cfg.Rate = 0
	c, err := NewCore(mustNet(t, spec, cfg), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// linkPort returns the output port of router r towards router to.
func linkPort(t *testing.T, c *Core, r, to int) int {
	t.Helper()
	n := c.n
	for gp := int(n.portStart[r]); gp < int(n.portStart[r+1]); gp++ {
		if n.gpChan[gp] >= 0 && int(n.gpPeerN[gp]) == to {
			return gp
		}
	}
	t.Fatalf("no port from %d to %d", r, to)
	return -1
}

// With credit delay d, the credit of a single flit comes back exactly
// 2·L + router delay + d cycles after the flit left: the flit crosses
// the link, leaves the next router (here: ejected) after its pipeline, and
// the credit crosses back, d cycles slower. Tail credit and input speedup,
// which route credits through the same pipeline, leave the loop as it is.
func TestCreditDelayRoundTrip(t *testing.T) {
	for _, staged := range []bool{false, true} {
		for _, d := range []int{0, 1, 3, 7} {
			for _, other := range []string{"", "tail", "speedup"} {
				cfg := DefaultConfig()
				cfg.VCs, cfg.LinkLatency, cfg.CreditDelay = 2, 2, d
				if staged {
					cfg.Router, cfg.Stages, cfg.TerminalLinks = RouterStaged, BookSimStages, true
				} else {
					cfg.RouterDelay = 3
				}
				switch other {
				case "tail":
					cfg.TailCredit = true
				case "speedup":
					cfg.InputSpeedup = 2
				}
				name := fmt.Sprintf("staged=%v d=%d %s", staged, d, other)
				c := quietCore(t, "mesh:2x2", cfg)
				og := linkPort(t, c, 0, 1)
				ovc := og * c.V
				if err := c.Send(0, 1, 1, -1); err != nil {
					t.Fatal(err)
				}
				left, back := int64(-1), int64(-1)
				for i := 0; i < 100 && back < 0; i++ {
					now := c.Now()
					before := c.credit[ovc]
					c.Tick()
					switch {
					case c.credit[ovc] < before:
						left = now
					case left >= 0 && c.credit[ovc] == int32(c.B):
						back = now
					}
				}
				want := int64(2*c.L) + c.Dr + int64(d)
				if left < 0 || back-left != want {
					t.Errorf("%s: flit left in cycle %d, credit back in %d: round trip %d, want %d", name, left, back, back-left, want)
				}
				if err := c.CheckConservation(); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		}
	}
}

// Two packets from one source on a single VC: under the tail-credit rule
// the second packet's head leaves router 0 only once the credit of the
// first packet's tail has come back; freeing the VC as the tail leaves
// (the default) lets it go before.
func TestTailCreditHoldsVC(t *testing.T) {
	for _, tail := range []bool{false, true} {
		for _, staged := range []bool{false, true} {
			cfg := DefaultConfig()
			cfg.VCs, cfg.Buf, cfg.LinkLatency, cfg.TailCredit = 1, 8, 2, tail
			if staged {
				cfg.Router, cfg.Stages, cfg.TerminalLinks, cfg.CreditDelay = RouterStaged, BookSimStages, true, 2
			}
			name := fmt.Sprintf("tail=%v staged=%v", tail, staged)
			c := quietCore(t, "mesh:2x2", cfg)
			og := linkPort(t, c, 0, 1)
			ovc := og * c.V
			for k := 0; k < 2; k++ {
				if err := c.Send(0, 1, 4, -1); err != nil {
					t.Fatal(err)
				}
			}
			tail1, head2, credBack := int64(-1), int64(-1), int64(-1)
			for i := 0; i < 200 && head2 < 0; i++ {
				now := c.Now()
				c.Tick()
				slot := og*c.L + int(now%int64(c.L))
				sent := c.lnk[slot]&1 != 0
				cr := c.credit[ovc]
				if sent {
					cr++ // the credit count as the cycle's receive phase left it
				}
				if tail1 >= 0 && credBack < 0 && cr == int32(c.B) {
					credBack = now
				}
				if !sent {
					continue
				}
				switch f := c.link[slot]; {
				case f.pid == 0 && f.seq == f.size-1:
					tail1 = now
				case f.pid == 1 && f.seq == 0:
					head2 = now
				}
			}
			if tail1 < 0 || head2 < 0 {
				t.Fatalf("%s: tail of packet 1 left in %d, head of packet 2 in %d", name, tail1, head2)
			}
			if tail && (credBack < 0 || head2 < credBack) {
				t.Errorf("%s: head of packet 2 left in cycle %d, before the tail credit of packet 1 came back (cycle %d)", name, head2, credBack)
			}
			if !tail && credBack >= 0 && head2 >= credBack {
				t.Errorf("%s: head of packet 2 left in cycle %d, not before the tail credit (cycle %d)", name, head2, credBack)
			}
			if tail && head2-tail1 < int64(2*c.L)+c.Dr+int64(cfg.CreditDelay) {
				t.Errorf("%s: head of packet 2 left %d cycles after the tail of packet 1, want ≥ the credit loop", name, head2-tail1)
			}
		}
	}
}

// With input speedup S, the VCs of an input port split into S crossbar
// inputs by v mod S: flits of one port leave in the same cycle only from
// different crossbar inputs and to different outputs, and with S = 2 two
// packets on VCs 0 and 1 of the terminal port, bound east and north, do
// cross the switch together. With S = 1 at most one flit a cycle leaves
// the port.
func TestInputSpeedupCrossbar(t *testing.T) {
	for _, S := range []int{1, 2, 4} {
		cfg := DefaultConfig()
		cfg.VCs, cfg.Buf, cfg.InputSpeedup = 4, 8, S
		c := quietCore(t, "mesh:2x2", cfg)
		w := &c.workers[0]
		lgp := int(c.n.localGP[0])
		// Packets of 4 flits on VCs 0, 1 and 2 of router 0's terminal
		// port: east (node 1), north (node 2) and to itself.
		for v, dst := range []int{1, 2, 0} {
			tm := &c.terms[0]
			h := c.headFlit(tm, 0, srcPkt{dst: c.n.terms[dst], tag: -1, size: 4})
			for k := 0; k < 4; k++ {
				f := h
				f.seq = uint16(k)
				c.pushBuf(w, 0, lgp, lgp*c.V+v, &f, 0)
			}
			w.st.injFlits += 4
			w.st.genPkts++
		}
		pairs := 0
		for i := 0; i < 50; i++ {
			var before [4]int32
			copy(before[:], c.bLen[lgp*c.V:lgp*c.V+4])
			c.Tick()
			var left []int
			for v := 0; v < 4; v++ {
				if c.bLen[lgp*c.V+v] < before[v] {
					left = append(left, v)
				}
			}
			if len(left) > min(S, 3) {
				t.Errorf("S=%d: %d flits left the port in one cycle (VCs %v)", S, len(left), left)
			}
			seen := map[int]bool{}
			for _, v := range left {
				if seen[v%S] {
					t.Errorf("S=%d: VCs %v share a crossbar input but left together", S, left)
				}
				seen[v%S] = true
			}
			if len(left) >= 2 {
				pairs++
			}
		}
		if err := c.CheckConservation(); err != nil {
			t.Fatalf("S=%d: %v", S, err)
		}
		if st := c.workers[0].st; st.delivPkts != 3 {
			t.Errorf("S=%d: %d of 3 packets delivered", S, st.delivPkts)
		}
		if (S == 1) != (pairs == 0) {
			t.Errorf("S=%d: %d cycles with two or more flits leaving one port", S, pairs)
		}
	}
}

// A configuration with more crossbar inputs than the allocator's 64 is
// refused; input speedup and local speedup do not combine.
func TestInputSpeedupLimits(t *testing.T) {
	cfg := DefaultConfig()
	cfg.VCs, cfg.InputSpeedup = 16, 16
	cfg.Rate = 0
	if _, err := NewCore(mustNet(t, "torus:4x4x4", cfg), cfg); err == nil {
		t.Error("7 ports × 16 crossbar inputs accepted")
	}
	cfg.InputSpeedup, cfg.LocalSpeedup = 2, 2
	if err := cfg.check(false); err == nil {
		t.Error("input speedup 2 with local speedup 2 accepted")
	}
}
