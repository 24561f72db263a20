package multiring

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// ParseSchedule reads a route schedule: the JSON `icn multiring capacity
// --json` prints (a CapacityReport: n, steps, schedule and table[].shares)
// or the plain form {"n": N, "steps": [...], "schedule": NAME, "shares":
// [[...], ...]}, one row of N-1 shares (route lengths 1..N-1) per step.
// Steps may come in any order and repeat (identical rings, every step
// the same number of times); the rows are moved to the multiring's ring
// order (see New), so a report read back is the schedule it was printed
// from. The name defaults to "table". Shares must lie in [0,1], be 0 on
// rings that cannot carry the route and sum to 1 within 1e-6 for every
// route length. Errors are one line.
func ParseSchedule(data []byte) (*Schedule, error) {
	var f struct {
		N        int    `json:"n"`
		Steps    []int  `json:"steps"`
		Schedule string `json:"schedule"`
		Table    []struct {
			Shares []float64 `json:"shares"`
		} `json:"table"`
		Shares [][]float64 `json:"shares"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("ring schedule: %s", strings.ReplaceAll(err.Error(), "\n", " "))
	}
	s, err := scheduleOf(f.N, f.Steps, f.Schedule, f.Shares, func() [][]float64 {
		rows := make([][]float64, len(f.Table))
		for i, t := range f.Table {
			rows[i] = t.Shares
		}
		return rows
	})
	if err != nil {
		return nil, fmt.Errorf("ring schedule: %v", err)
	}
	return s, nil
}

// scheduleOf builds the schedule of a file's fields: the share rows are
// rows, or table() if rows is nil. The rows' sizes are checked before the
// multiring is built, so its tables never exceed what the file spells out.
func scheduleOf(n int, steps []int, name string, rows [][]float64, table func() [][]float64) (*Schedule, error) {
	if n < 2 || n > MaxN {
		return nil, fmt.Errorf("n=%d out of range 2..%d", n, MaxN)
	}
	if len(steps) == 0 || len(steps) > maxRings {
		return nil, fmt.Errorf("want 1..%d ring steps, got %d", maxRings, len(steps))
	}
	if rows == nil {
		rows = table()
	}
	if len(rows) != len(steps) {
		return nil, fmt.Errorf("%d share rows for %d rings", len(rows), len(steps))
	}
	for j, row := range rows {
		if len(row) != n-1 {
			return nil, fmt.Errorf("ring %d lists %d shares, want %d (route lengths 1..%d)", j+1, len(row), n-1, n-1)
		}
	}
	distinct, copies, err := splitCopies(n, steps)
	if err != nil {
		return nil, err
	}
	m, err := NewCopies(n, distinct, copies)
	if err != nil {
		return nil, err
	}
	p := make([]float64, len(m.Steps)*n)
	used := map[int]int{}
	for i, st := range steps {
		v := mod(st, n)
		j := slices.Index(m.Steps, v) + used[v]
		used[v]++
		copy(p[j*n+1:(j+1)*n], rows[i])
	}
	if name == "" {
		name = "table"
	}
	s := &Schedule{M: m, Name: name, P: p}
	if err := s.check(0, 1e-6); err != nil {
		return nil, err
	}
	return s, nil
}

// splitCopies returns the distinct steps (mod n, in first-seen order) and
// how often each is listed, which must be the same for all.
func splitCopies(n int, steps []int) ([]int, int, error) {
	count := map[int]int{}
	var distinct []int
	for _, st := range steps {
		v := mod(st, n)
		if count[v] == 0 {
			distinct = append(distinct, st)
		}
		count[v]++
	}
	copies := count[mod(distinct[0], n)]
	for _, st := range distinct[1:] {
		if c := count[mod(st, n)]; c != copies {
			return nil, 0, fmt.Errorf("ring step %d is listed %d times and %d %d times: every ring needs the same number of copies", distinct[0], copies, st, c)
		}
	}
	return distinct, copies, nil
}

// mod is s mod n in 0..n-1.
func mod(s, n int) int { return ((s % n) + n) % n }
