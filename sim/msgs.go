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
	M := len(msgs)
	T := len(n.terms)
	waiting := make([]int, M)
	ready := make([]int64, M)
	dependents := make([][]int32, M)
	res := &MessageResult{Sent: make([]int64, M), Delivered: make([]int64, M)}
	for i, m := range msgs {
		if m.Src < 0 || m.Src >= T || m.Dst < 0 || m.Dst >= T {
			return nil, fmt.Errorf("message %d: terminal out of range 0..%d", i, T-1)
		}
		if m.Size < 1 {
			return nil, fmt.Errorf("message %d: size %d", i, m.Size)
		}
		waiting[i] = len(m.Deps)
		for _, d := range m.Deps {
			if d < 0 || d >= M || d == i {
				return nil, fmt.Errorf("message %d: bad dependency %d", i, d)
			}
			dependents[d] = append(dependents[d], int32(i))
		}
		ready[i] = int64(startup)
		res.Sent[i], res.Delivered[i] = -1, -1
	}
	// pending holds messages whose dependencies are met, by ready cycle.
	var pending []int32
	for i := range msgs {
		if waiting[i] == 0 {
			pending = append(pending, int32(i))
		}
	}
	done := 0
	var dl []Delivery
	deliver := func(i int, at int64) {
		res.Delivered[i] = at
		res.Finish = max(res.Finish, at)
		done++
		for _, j := range dependents[i] {
			waiting[j]--
			ready[j] = max(ready[j], at+int64(startup))
			if waiting[j] == 0 {
				pending = append(pending, j)
			}
		}
	}
	for done < M {
		if c.deadlock != nil {
			return res, c.deadlock
		}
		if maxCycles > 0 && c.now > maxCycles {
			return res, fmt.Errorf("plan did not finish within %d cycles (%d of %d messages delivered)", maxCycles, done, M)
		}
		// Send every pending message that is ready, in index order.
		keep := pending[:0]
		var now []int32
		for _, i := range pending {
			if ready[i] <= c.now {
				now = append(now, i)
			} else {
				keep = append(keep, i)
			}
		}
		pending = keep
		sortInt32(now)
		for _, i := range now {
			m := msgs[i]
			res.Sent[i] = c.now
			if m.Src == m.Dst {
				deliver(int(i), c.now)
				continue
			}
			if err := c.Send(m.Src, m.Dst, m.Size, i); err != nil {
				return res, err
			}
		}
		if done == M {
			break
		}
		c.Tick()
		dl = c.TakeDeliveries(dl[:0])
		for _, d := range dl {
			deliver(int(d.Tag), d.At)
		}
	}
	res.Cycles = c.now
	if err := c.CheckConservation(); err != nil {
		return res, err
	}
	return res, nil
}

func sortInt32(a []int32) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
