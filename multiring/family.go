package multiring

import (
	"time"
)

// FamilyRow is one cell of the seed's table 2.4 (growable quasi-optimal
// multirings) with its capacities, and optionally what the search finds.
type FamilyRow struct {
	N         int     `json:"n"`
	Rings     int     `json:"rings"`
	Steps     []int   `json:"steps"` // the seed's duplex steps
	StepSet   string  `json:"step_set"`
	Shortest  float64 `json:"shortest"`
	Balanced  float64 `json:"balanced"`
	Optimal   float64 `json:"optimal"`
	Bound     float64 `json:"bound"`
	CPerN     float64 `json:"c_per_n"` // balanced C / N (the seed's K, 0.5 < K < 2)
	Cable     int     `json:"cable"`   // ring-±1 lengths, rings laid along ±1
	CableSeed int     `json:"cable_seed_formula"`
	// With search: the best multiring within the seed set's cable, and the
	// best regardless of cable, with the time each search took.
	BestUnderCable *Candidate `json:"best_under_cable,omitempty"`
	Best           *Candidate `json:"best,omitempty"`
	SearchSeconds  float64    `json:"search_seconds,omitempty"`
}

// Table24 lists the seed's table 2.4: N and number of rings n → duplex steps.
var Table24 = []struct {
	N, Rings int
	Steps    []int
}{
	{16, 4, []int{1, 3}}, {16, 6, []int{1, 2, 3}},
	{32, 6, []int{1, 2, 3}}, {32, 8, []int{1, 2, 3, 7}},
	{64, 8, []int{1, 2, 3, 7}}, {64, 10, []int{1, 2, 3, 5, 7}},
	{128, 10, []int{1, 2, 3, 5, 7}}, {128, 12, []int{1, 2, 3, 5, 7, 9}},
}

// Family evaluates table 2.4; with search it also runs Search twice per
// row (under the seed set's cable and unconstrained).
func Family(search bool, workers int, progress func(row int)) ([]FamilyRow, error) {
	var out []FamilyRow
	for i, t := range Table24 {
		var signed []int
		for _, s := range t.Steps {
			signed = append(signed, s, -s)
		}
		m, err := New(t.N, signed)
		if err != nil {
			return nil, err
		}
		opt, err := m.Optimal()
		if err != nil {
			return nil, err
		}
		bal := m.Balanced().Effective()
		row := FamilyRow{N: t.N, Rings: t.Rings, Steps: t.Steps, StepSet: FormatSteps(t.N, signed),
			Shortest: m.Shortest().Effective(), Balanced: bal, Optimal: opt.Effective(), Bound: m.UpperBound(),
			CPerN: bal / float64(t.N), Cable: Cable(t.Steps), CableSeed: CableSeed(t.Rings)}
		if search {
			start := time.Now()
			r, err := Search(SearchOptions{N: t.N, Rings: t.Rings, Top: 1, MaxCable: row.Cable, Workers: workers})
			if err != nil {
				return nil, err
			}
			row.BestUnderCable = &r.Best[0]
			r, err = Search(SearchOptions{N: t.N, Rings: t.Rings, Top: 1, Workers: workers})
			if err != nil {
				return nil, err
			}
			row.Best = &r.Best[0]
			row.SearchSeconds = time.Since(start).Seconds()
		}
		out = append(out, row)
		if progress != nil {
			progress(i)
		}
	}
	return out, nil
}
