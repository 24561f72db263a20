package sched

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ParseStartDelays reads per-job start delays (Config.StartDelay), one
// job per line: its id and its delay in trace seconds (a number, or a
// duration with unit s, m, h, d, w or mo), separated by blanks; blank
// lines and lines starting with # are skipped. A job listed twice, a
// negative or non-finite delay, or a malformed line is an error naming
// the line. name is the file's name in errors.
func ParseStartDelays(r io.Reader, name string) (map[int]float64, error) {
	out := map[int]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: want JOB-ID DELAY, got %d fields", name, line, len(f))
		}
		id, err := strconv.Atoi(f[0])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: job id %q is not an integer", name, line, f[0])
		}
		d, err := ParseDelay(f[1])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, line, err)
		}
		if _, dup := out[id]; dup {
			return nil, fmt.Errorf("%s:%d: job %d listed twice", name, line, id)
		}
		out[id] = d
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return out, nil
}

// ParseDelay reads a delay in trace seconds: 0, a non-negative number,
// or a duration with unit s, m, h, d, w or mo.
func ParseDelay(s string) (float64, error) {
	if v, err := strconv.ParseFloat(s, 64); err == nil && v == 0 {
		return 0, nil
	}
	d, err := parseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q: want a number of seconds ≥ 0 or a duration with unit s, m, h, d, w or mo", s)
	}
	if math.IsInf(d, 0) {
		return 0, fmt.Errorf("%q is not finite", s)
	}
	return d, nil
}

// DelayOf is a Config.StartDelay from per-job delays (jobs not listed
// start at once) and a delay for every job added to them.
func DelayOf(perJob map[int]float64, every float64) func(Job) float64 {
	if len(perJob) == 0 && every == 0 {
		return nil
	}
	return func(j Job) float64 { return every + perJob[j.ID] }
}
