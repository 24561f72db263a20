package unicast

import (
	"fmt"
	"time"
)

// routeDORLayered is the dor engine: routeDOR, and on a torus the paths
// layered onto lanes, or the dateline rule's lanes when layering does not
// need fewer.
func routeDORLayered(f *Fabric, o Options) (*Result, engineState, error) {
	res := &Result{LanesNeeded: 1}
	var dl *dateline
	var err error
	res.Tables, dl, err = routeDOR(f, o)
	if err == nil && dl != nil {
		// Layering usually needs fewer lanes than the 2^rings of the
		// dateline rule; use the rule when layering does not beat it.
		start := time.Now()
		var lr layerResult
		limit := min(o.Lanes, 1<<dl.bits-1)
		if limit >= 1 {
			lr, err = layer(res.Tables, limit, o.Workers, o.Progress)
		}
		res.LayerBreaks, res.LayerMoved = lr.breaks, lr.moved
		if err == nil && (limit < 1 || lr.limit) {
			if 1<<dl.bits <= o.Lanes {
				dl.assign(res.Tables)
				lr = layerResult{needed: 1 << dl.bits}
			}
		}
		res.LanesNeeded, res.LaneLimit = lr.needed, lr.limit
		res.LayerSeconds = time.Since(start).Seconds()
	}
	if err != nil {
		return nil, engineState{}, err
	}
	return res, engineState{}, nil
}

// routeDOR is dimension-order routing on a mesh or torus of switches: a
// route corrects X first, then Y, …; on a ring it goes the shorter way
// (positive on ties). Parallel cables of one direction are balanced as in
// minhop. A failed cable on the dimension-order path leaves the pair
// unrouted (the audit reports it): dimension order has no detours.
//
// On a mesh the routes are deadlock-free on one lane. On a torus each ring
// closes a dependency cycle; the caller layers the paths onto lanes.
// torus reports whether any dimension wraps.
func routeDOR(f *Fabric, o Options) (t *Tables, dl *dateline, err error) {
	g := f.G
	if !g.HasCoords() {
		return nil, nil, fmt.Errorf("dor needs a mesh or torus of switches (e.g. torus:4x4:endpoints=1); %s has no coordinates", g.Name())
	}
	coord, err := dorCoords(f)
	if err != nil {
		return nil, nil, err
	}
	if err := checkDORLinks(f, coord); err != nil {
		return nil, nil, err
	}
	dl = newDateline(f, coord)
	t = NewTables(f, o.Engine)
	fillLocal(t)
	balanced(t, f.dests(), dorCandidates(f, coord), o.Workers, o.Progress)
	return t, dl, nil
}

// dorCoords returns the coordinates of every switch (switch s at
// s*dims…), checking each switch owns its coordinates.
func dorCoords(f *Fabric) ([]int16, error) {
	g := f.G
	nd := len(g.Dims())
	coord := make([]int16, len(f.switches)*nd)
	for s, v := range f.switches {
		for i := 0; i < nd; i++ {
			coord[s*nd+i] = int16(g.CoordAt(int(v), i))
		}
		if g.NodeAt(g.Coord(int(v))) != int(v) {
			return nil, fmt.Errorf("dor: switch %s does not own its coordinates", g.NodeName(int(v)))
		}
	}
	return coord, nil
}

// checkDORLinks checks every switch-to-switch link is a unit step in its
// dimension.
func checkDORLinks(f *Fabric, coord []int16) error {
	g := f.G
	dims := g.Dims()
	nd := len(dims)
	for l, lk := range g.Links() {
		a, b := f.swIndex[lk.A], f.swIndex[lk.B]
		if a < 0 || b < 0 {
			continue
		}
		d := int(lk.Dim)
		if d < 0 || d >= nd {
			return fmt.Errorf("dor: switch link %s has no dimension", g.LinkName(l))
		}
		for i := 0; i < nd; i++ {
			ca, cb := int(coord[int(a)*nd+i]), int(coord[int(b)*nd+i])
			want := ca
			if i == d {
				want = (ca + 1) % dims[i]
			}
			if cb != want {
				return fmt.Errorf("dor: link %s is not a unit step in dimension %s", g.LinkName(l), dimName(d))
			}
		}
	}
	return nil
}

// newDateline gives every ring of at least 4 switches a lane bit; nil
// when there is none (a mesh, or only short rings).
func newDateline(f *Fabric, coord []int16) *dateline {
	dims, wrap := f.G.Dims(), f.G.Wrap()
	dl := &dateline{f: f, dims: dims, coord: coord, bit: make([]int, len(dims))}
	for i := range dims {
		dl.bit[i] = -1
		// Rings of 3 or fewer switches: routes make at most one hop in
		// them, so they carry no same-ring dependency.
		if wrap[i] && dims[i] >= 4 {
			dl.bit[i] = dl.bits
			dl.bits++
		}
	}
	if dl.bits == 0 {
		return nil
	}
	return dl
}

// dorCandidates returns the candidate ports of dimension-order routing:
// the live switch links of switch s in the first dimension where s and tt
// differ, in the shorter direction round a ring (+ on a tie).
func dorCandidates(f *Fabric, coord []int16) func(_, s, tt int, buf []uint8) []uint8 {
	g := f.G
	dims, wrap := g.Dims(), g.Wrap()
	nd := len(dims)
	return func(_, s, tt int, buf []uint8) []uint8 {
		dim, sign := -1, 0
		for i := 0; i < nd; i++ {
			cs, ct := int(coord[s*nd+i]), int(coord[tt*nd+i])
			if cs == ct {
				continue
			}
			dim = i
			if wrap[i] {
				fwd := (ct - cs + dims[i]) % dims[i]
				if fwd <= dims[i]-fwd {
					sign = 1
				} else {
					sign = -1
				}
			} else if ct > cs {
				sign = 1
			} else {
				sign = -1
			}
			break
		}
		if dim < 0 {
			return buf
		}
		sv := int(f.switches[s])
		for _, c := range g.Out(sv) {
			ci := int(c)
			if !g.Up(ci) || f.swIndex[g.Dst(ci)] < 0 {
				continue
			}
			if d, sg := g.Dir(ci); d == dim && sg == sign {
				buf = append(buf, uint8(g.SrcPort(ci)))
			}
		}
		return buf
	}
}

// dateline is the lane assignment with one bit per ring dimension: the
// lane of a route has bit i set when the route crosses the wrap-around
// link of dimension i. Dimension order only turns from lower to higher
// dimensions, so a dependency cycle stays inside one ring and one
// direction; on a lane whose bit is clear nobody uses that ring's
// wrap-around link, and on a lane whose bit is set every arc of the ring
// contains the wrap-around link and is at most half a ring long, so no arc
// reaches the opposite side and the cycle cannot close.
type dateline struct {
	f     *Fabric
	dims  []int
	coord []int16
	bit   []int
	bits  int
}

// assign sets the lanes of every (source switch, LID) path of t.
func (d *dateline) assign(t *Tables) {
	f := d.f
	S := len(f.switches)
	nd := len(d.dims)
	lanes := make([]uint8, S*t.stride)
	ds := f.dests()
	for s := 0; s < S; s++ {
		for _, de := range ds {
			if de.sw < 0 {
				continue
			}
			l := 0
			for i := 0; i < nd; i++ {
				if d.bit[i] < 0 {
					continue
				}
				k := d.dims[i]
				cs, ct := int(d.coord[s*nd+i]), int(d.coord[de.sw*nd+i])
				if cs == ct {
					continue
				}
				fwd := (ct - cs + k) % k
				plus := fwd <= k-fwd
				if (plus && ct < cs) || (!plus && ct > cs) {
					l |= 1 << d.bit[i]
				}
			}
			lanes[s*t.stride+de.lid] = uint8(l)
		}
	}
	t.setLanes(lanes, 1<<d.bits)
}

func dimName(i int) string {
	const names = "XYZWVU"
	if i >= 0 && i < len(names) {
		return names[i : i+1]
	}
	return fmt.Sprintf("D%d", i)
}
