package multiring

// CapacityReport is the full analysis of one multiring and schedule (the
// seed's tables 2.1–2.3 plus capacities), ready for JSON.
type CapacityReport struct {
	N                 int       `json:"n"`
	Steps             []int     `json:"steps"`    // signed ring steps in ring order
	StepSet           string    `json:"step_set"` // compact, e.g. "{±1,±3}"
	Copies            int       `json:"copies"`
	Schedule          string    `json:"schedule"`
	RingCapacity      []float64 `json:"ring_capacity"`      // c_j = N / mean length
	EffectiveCapacity float64   `json:"effective_capacity"` // C = N(N-1)/L
	SumCapacity       float64   `json:"sum_capacity"`       // Σ c_j (not reached when loads differ)
	MaxLoad           float64   `json:"max_load"`           // L = max_j L_j
	UpperBound        float64   `json:"upper_bound"`        // no schedule exceeds it
	Table             []RingRow `json:"table"`              // per ring: shares by route length
	RouteTable        [][]int   `json:"route_table"`        // table 2.1: node after h hops, h = 0..N-1
}

// RingRow is one ring of the schedule table: entry r-1 is route length r.
type RingRow struct {
	Ring       string    `json:"ring"`
	Step       int       `json:"step"`
	Shares     []float64 `json:"shares"`   // p_jr
	Lengths    []int     `json:"lengths"`  // l_j(r), -1 if the ring cannot carry r
	Weighted   []float64 `json:"weighted"` // l_j(r)·p_jr
	Shortest   []bool    `json:"shortest"` // ring j is a shortest ring for r
	Load       float64   `json:"load"`     // L_j
	Routes     float64   `json:"routes"`   // M_j
	MeanLength float64   `json:"mean_length"`
	Capacity   float64   `json:"capacity"` // c_j
}

// Report analyses schedule s.
func (s *Schedule) Report() *CapacityReport {
	m := s.M
	n := m.N
	rep := &CapacityReport{
		N: n, Steps: m.Signed(), StepSet: FormatSteps(n, m.Steps), Copies: m.Copies, Schedule: s.Name,
		RingCapacity: s.RingCapacity(), EffectiveCapacity: s.Effective(), SumCapacity: s.SumCapacity(),
		MaxLoad: s.MaxLoad(), UpperBound: m.UpperBound(),
	}
	shortest := make([]int32, n)
	for r := 1; r < n; r++ {
		shortest[r] = -1
		for j := range m.Steps {
			if l := m.length[j*n+r]; l >= 0 && (shortest[r] < 0 || l < shortest[r]) {
				shortest[r] = l
			}
		}
	}
	loads, routes, caps := s.Loads(), s.Routes(), s.RingCapacity()
	for j := range m.Steps {
		row := RingRow{Ring: m.Label(j), Step: m.Signed()[j], Load: loads[j], Routes: routes[j], Capacity: caps[j]}
		if routes[j] > 0 {
			row.MeanLength = loads[j] / routes[j]
		}
		for r := 1; r < n; r++ {
			p, l := s.Share(j, r), m.Length(j, r)
			row.Shares = append(row.Shares, p)
			row.Lengths = append(row.Lengths, l)
			row.Weighted = append(row.Weighted, p*float64(max(l, 0)))
			row.Shortest = append(row.Shortest, int32(l) == shortest[r])
		}
		rep.Table = append(rep.Table, row)
		visit := make([]int, n)
		for h := range visit {
			visit[h] = m.Visit(j, h)
		}
		rep.RouteTable = append(rep.RouteTable, visit)
	}
	return rep
}
