package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
)

// JSON writes v as indented JSON followed by a newline.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Table accumulates rows and prints them aligned.
type Table struct {
	header []string
	rows   [][]string
}

// NewTable starts a table with the given column headers (may be empty).
func NewTable(header ...string) *Table { return &Table{header: header} }

// Row appends a row; values are formatted with Cell.
func (t *Table) Row(vals ...any) {
	r := make([]string, len(vals))
	for i, v := range vals {
		r[i] = Cell(v)
	}
	t.rows = append(t.rows, r)
}

// Len returns the number of rows.
func (t *Table) Len() int { return len(t.rows) }

// Write prints the table.
func (t *Table) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(t.header) > 0 {
		fmt.Fprintln(tw, strings.Join(t.header, "\t"))
		under := make([]string, len(t.header))
		for i, h := range t.header {
			under[i] = strings.Repeat("-", len([]rune(h)))
		}
		fmt.Fprintln(tw, strings.Join(under, "\t"))
	}
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// KV prints key/value pairs as a two-column table.
func KV(w io.Writer, pairs ...any) error {
	t := NewTable()
	for i := 0; i+1 < len(pairs); i += 2 {
		t.Row(pairs[i], pairs[i+1])
	}
	return t.Write(w)
}

// Cell formats one table value: floats with up to 4 significant decimals,
// durations rounded, slices joined with commas.
func Cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "-"
	case string:
		return x
	case float64:
		return Float(x)
	case float32:
		return Float(float64(x))
	case time.Duration:
		return Duration(x)
	case bool:
		if x {
			return "yes"
		}
		return "no"
	case []int:
		s := make([]string, len(x))
		for i, e := range x {
			s[i] = fmt.Sprint(e)
		}
		return strings.Join(s, ",")
	case []string:
		return strings.Join(x, ",")
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

// Float formats f compactly: integers without decimals, others with 4
// significant decimals, NaN/Inf spelled out.
func Float(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 0):
		return fmt.Sprint(f)
	case f == math.Trunc(f) && math.Abs(f) < 1e15:
		return fmt.Sprintf("%.0f", f)
	case math.Abs(f) >= 100:
		return fmt.Sprintf("%.2f", f)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", f), "0"), ".")
}

// Duration rounds d for display.
func Duration(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	}
	return d.String()
}

// Progress is a progress bar on stderr; it prints nothing when quiet or when
// stderr is not a terminal and ICN_PROGRESS is unset (so logs stay clean).
type Progress struct {
	bar *progressbar.ProgressBar
}

// NewProgress starts a bar for total steps with a description.
func NewProgress(total int, desc string, quiet bool) *Progress {
	if quiet || !stderrWanted() {
		return &Progress{}
	}
	bar := progressbar.NewOptions(total,
		progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	return &Progress{bar: bar}
}

func stderrWanted() bool {
	if v := os.Getenv("ICN_PROGRESS"); v != "" {
		return v != "0"
	}
	fi, err := os.Stderr.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Add advances the bar; safe for concurrent use.
func (p *Progress) Add(n int) {
	if p != nil && p.bar != nil {
		_ = p.bar.Add(n)
	}
}

// Done finishes the bar.
func (p *Progress) Done() {
	if p != nil && p.bar != nil {
		_ = p.bar.Finish()
	}
}
