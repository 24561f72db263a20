package multiring

import (
	"fmt"
	"math"
)

// RingNet is a general non-switched ring network: each duplex ring visits a
// cyclic sequence of distinct subscribers 0..Subscribers-1 and a packet
// rides one ring (in one direction) from source to destination. Sparse
// multirings (seed §7) are RingNets whose rings hold only some subscribers.
type RingNet struct {
	Subscribers int
	Rings       [][]int
}

// NetCapacity is the uniform-traffic capacity of a RingNet under the
// shortest schedule: every ordered pair of subscribers is sent on the
// (ring, direction) with the fewest hops, split equally among ties.
type NetCapacity struct {
	// MaxArcLoad is the largest number of routes (weighted by their
	// shares) crossing one arc, for one packet per ordered pair.
	MaxArcLoad float64
	// Effective is R(R-1)/MaxArcLoad: packets delivered per packet time at
	// saturation, the seed's effective capacity C (for a full multiring it
	// equals N(N-1)/max_j L_j).
	Effective float64
	// RingCapacity is, per duplex ring, K(K-1)/max arc load of a lone
	// duplex ring of the same K subscribers (≈ 8 for large K, the seed's 7.5
	// per ring in §8).
	RingCapacity []float64
	Unreachable  int // ordered pairs sharing no ring
}

// Capacity computes the shortest-schedule capacity. It fails if some pair
// of subscribers shares no ring.
func (rn *RingNet) Capacity() (NetCapacity, error) {
	R := rn.Subscribers
	if R < 2 {
		return NetCapacity{}, fmt.Errorf("ring network needs at least 2 subscribers")
	}
	where, err := rn.ringPositions()
	if err != nil {
		return NetCapacity{}, err
	}
	loads := newArcLoads(rn.Rings)
	var out NetCapacity
	var best []arcRoute
	for a := 0; a < R; a++ {
		for b := 0; b < R; b++ {
			if a == b {
				continue
			}
			best = rn.shortestRoutes(where[a], where[b], best[:0])
			if len(best) == 0 {
				out.Unreachable++
				continue
			}
			w := 1 / float64(len(best))
			for _, c := range best {
				loads.add(c, w)
			}
		}
	}
	if out.Unreachable > 0 {
		return out, fmt.Errorf("%d ordered pairs of subscribers share no ring", out.Unreachable)
	}
	out.MaxArcLoad = loads.max()
	for i := range rn.Rings {
		out.RingCapacity = append(out.RingCapacity, DuplexRingCapacity(len(rn.Rings[i])))
	}
	out.Effective = float64(R) * float64(R-1) / out.MaxArcLoad
	return out, nil
}

// ringPos is one place of a subscriber: position pos on ring ring.
type ringPos struct{ ring, pos int }

// ringPositions checks the rings and lists, for each subscriber, the
// places where it sits on them.
func (rn *RingNet) ringPositions() ([][]ringPos, error) {
	where := make([][]ringPos, rn.Subscribers)
	for i, ring := range rn.Rings {
		if len(ring) < 2 {
			return nil, fmt.Errorf("ring %d has fewer than 2 subscribers", i+1)
		}
		seen := map[int]bool{}
		for p, v := range ring {
			if v < 0 || v >= rn.Subscribers {
				return nil, fmt.Errorf("ring %d: subscriber %d out of range", i+1, v+1)
			}
			if seen[v] {
				return nil, fmt.Errorf("ring %d visits subscriber %d twice", i+1, v+1)
			}
			seen[v] = true
			where[v] = append(where[v], ringPos{i, p})
		}
	}
	return where, nil
}

// arcRoute is a path along one ring: hops arcs in direction dir (0 =
// increasing positions) starting at position from.
type arcRoute struct{ ring, dir, from, hops int }

// shortestRoutes appends to buf every shortest route from a subscriber
// placed at pa to one placed at pb along a ring they share.
func (rn *RingNet) shortestRoutes(pa, pb []ringPos, buf []arcRoute) []arcRoute {
	bh := math.MaxInt
	for _, oa := range pa {
		for _, ob := range pb {
			if oa.ring != ob.ring {
				continue
			}
			K := len(rn.Rings[oa.ring])
			fw := ((ob.pos-oa.pos)%K + K) % K
			for dir, h := range [2]int{fw, K - fw} {
				if h < bh {
					bh = h
					buf = buf[:0]
				}
				if h == bh {
					buf = append(buf, arcRoute{oa.ring, dir, oa.pos, h})
				}
			}
		}
	}
	return buf
}

// arcLoads holds, per ring and direction, a difference array of arc
// loads; arc p of direction 0 goes from position p to p+1, of direction 1
// from p+1 to p.
type arcLoads [][2][]float64

func newArcLoads(rings [][]int) arcLoads {
	diff := make(arcLoads, len(rings))
	for i, ring := range rings {
		diff[i] = [2][]float64{make([]float64, len(ring)+1), make([]float64, len(ring)+1)}
	}
	return diff
}

// add puts load w on every arc of route c.
func (diff arcLoads) add(c arcRoute, w float64) {
	d := diff[c.ring][c.dir]
	K := len(d) - 1
	// arcs: dir 0 uses arcs from, from+1, ..., from+hops-1 (mod K);
	// dir 1 uses arcs from-1, ..., from-hops (mod K).
	start := c.from
	if c.dir == 1 {
		start = ((c.from-c.hops)%K + K) % K
	}
	end := start + c.hops
	if end <= K {
		d[start] += w
		d[end] -= w
	} else {
		d[start] += w
		d[K] -= w
		d[0] += w
		d[end-K] -= w
	}
}

// max is the highest load of any arc.
func (diff arcLoads) max() float64 {
	m := 0.0
	for i := range diff {
		for dir := 0; dir < 2; dir++ {
			d := diff[i][dir]
			s := 0.0
			for _, x := range d[:len(d)-1] {
				s += x
				m = math.Max(m, s)
			}
		}
	}
	return m
}

// DuplexRingCapacity is the effective capacity of one duplex ring of K
// subscribers under the shortest schedule: K(K-1)/L with
// L = Σ_{r<K/2} r + (K/2)/2 for even K. It tends to 8 (seed §2).
func DuplexRingCapacity(K int) float64 {
	if K < 2 {
		return 0
	}
	L := 0.0
	for r := 1; r < K; r++ {
		switch {
		case 2*r < K:
			L += float64(r)
		case 2*r == K:
			L += float64(r) / 2
		}
	}
	return float64(K) * float64(K-1) / L
}
