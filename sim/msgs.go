package sim

import (
	"fmt"
)

// Message is one message of a communication plan (e.g. a collective
// operation broken into steps). It is sent once every message in Deps has
// been delivered, plus the start-up time; Src and Dst are terminal
// indices (Network.Terminals order), Size is in flits.
type Message struct {
	Src, Dst int
	Size     int
	Deps     []int
}

// MessageResult is the outcome of a plan: when each message was sent and
// delivered, and when the last one arrived.
type MessageResult struct {
	Sent      []int64 `json:"-"`
	Delivered []int64 `json:"-"`
	Finish    int64   `json:"finish"` // cycle the last message was delivered
	Cycles    int64   `json:"cycles"`
}

// RunMessages simulates a plan on network n (synthetic traffic off). Each
// message is sent startup cycles after its last dependency was delivered
// (or at cycle startup if it has none). It fails on a deadlock or if the
// plan does not finish within maxCycles (0 = no limit beyond deadlock
// detection).
func RunMessages(n *Network, cfg Config, msgs []Message, startup int, maxCycles int64) (*MessageResult, error) {
	cfg.Rate = 0
	cfg.Traffic = "uniform"
	c, err := NewCore(n, cfg)
	if err != nil {
		return nil, err
	}
	c.LogDeliveries(true)
	pl, err := newMessagePlan(msgs, len(n.terms), startup)
	if err != nil {
		return nil, err
	}
	res := pl.res
	M := len(msgs)
	var dl []Delivery
	for pl.done < M {
		if c.deadlock != nil {
			return res, c.deadlock
		}
		if maxCycles > 0 && c.now > maxCycles {
			return res, fmt.Errorf("plan did not finish within %d cycles (%d of %d messages delivered)", maxCycles, pl.done, M)
		}
		// Send every pending message that is ready, in index order.
		for _, i := range pl.takeReady(c.now) {
			m := msgs[i]
			res.Sent[i] = c.now
			if m.Src == m.Dst {
				pl.deliver(int(i), c.now)
				continue
			}
			if err := c.Send(m.Src, m.Dst, m.Size, i); err != nil {
				return res, err
			}
		}
		if pl.done == M {
			break
		}
		c.Tick()
		dl = c.TakeDeliveries(dl[:0])
		for _, d := range dl {
			pl.deliver(int(d.Tag), d.At)
		}
	}
	res.Cycles = c.now
	if err := c.CheckConservation(); err != nil {
		return res, err
	}
	return res, nil
}

// messagePlan tracks the dependencies of a message plan while it runs.
type messagePlan struct {
	startup    int64
	waiting    []int     // unmet dependencies per message
	ready      []int64   // earliest send cycle per message
	dependents [][]int32 // messages waiting for each message
	pending    []int32   // messages whose dependencies are met
	done       int       // messages delivered
	res        *MessageResult
}

// newMessagePlan checks msgs (terminals in 0..T-1, positive sizes, valid
// dependencies) and builds their dependency graph; messages without
// dependencies are ready at cycle startup.
func newMessagePlan(msgs []Message, T, startup int) (*messagePlan, error) {
	M := len(msgs)
	pl := &messagePlan{
		startup:    int64(startup),
		waiting:    make([]int, M),
		ready:      make([]int64, M),
		dependents: make([][]int32, M),
		res:        &MessageResult{Sent: make([]int64, M), Delivered: make([]int64, M)},
	}
	for i, m := range msgs {
		if m.Src < 0 || m.Src >= T || m.Dst < 0 || m.Dst >= T {
			return nil, fmt.Errorf("message %d: terminal out of range 0..%d", i, T-1)
		}
		if m.Size < 1 {
			return nil, fmt.Errorf("message %d: size %d", i, m.Size)
		}
		pl.waiting[i] = len(m.Deps)
		for _, d := range m.Deps {
			if d < 0 || d >= M || d == i {
				return nil, fmt.Errorf("message %d: bad dependency %d", i, d)
			}
			pl.dependents[d] = append(pl.dependents[d], int32(i))
		}
		pl.ready[i] = int64(startup)
		pl.res.Sent[i], pl.res.Delivered[i] = -1, -1
	}
	for i := range msgs {
		if pl.waiting[i] == 0 {
			pl.pending = append(pl.pending, int32(i))
		}
	}
	return pl, nil
}

// takeReady removes the pending messages that are ready at cycle now and
// returns them in index order.
func (pl *messagePlan) takeReady(now int64) []int32 {
	keep := pl.pending[:0]
	var out []int32
	for _, i := range pl.pending {
		if pl.ready[i] <= now {
			out = append(out, i)
		} else {
			keep = append(keep, i)
		}
	}
	pl.pending = keep
	sortInt32(out)
	return out
}

// deliver records message i as delivered at cycle at and releases the
// messages that depended on it, ready a start-up time later.
func (pl *messagePlan) deliver(i int, at int64) {
	pl.res.Delivered[i] = at
	pl.res.Finish = max(pl.res.Finish, at)
	pl.done++
	for _, j := range pl.dependents[i] {
		pl.waiting[j]--
		pl.ready[j] = max(pl.ready[j], at+pl.startup)
		if pl.waiting[j] == 0 {
			pl.pending = append(pl.pending, j)
		}
	}
}

func sortInt32(a []int32) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
