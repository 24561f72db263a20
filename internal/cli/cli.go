package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
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

// Quiet silences every progress report (icn's -q/--quiet, a flag of every
// command).
var Quiet bool

// Progress reports a long run's progress on stderr: a bar on a terminal;
// elsewhere (a log, a pipe) one line every few seconds once the run took
// 2 s. ICN_PROGRESS=0 silences it, ICN_PROGRESS=1 draws the bar on any
// stderr.
type Progress struct {
	bar   *progressbar.ProgressBar
	lines *lineProgress
	once  sync.Once
}

// NewProgress starts a report of total steps (-1: unknown) with a
// description.
func NewProgress(total int, desc string, quiet bool) *Progress {
	switch {
	case quiet || Quiet || progressMode() == progressOff:
		return &Progress{}
	case progressMode() == progressLines:
		return &Progress{lines: startLines(desc, total)}
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
	reporting.Add(1)
	return &Progress{bar: bar}
}

const (
	progressOff = iota
	progressBar
	progressLines
)

// progressMode is how progress is reported: ICN_PROGRESS if set (0 off,
// anything else a bar), else a bar on a terminal and lines elsewhere.
func progressMode() int {
	if v := os.Getenv("ICN_PROGRESS"); v != "" {
		if v == "0" {
			return progressOff
		}
		return progressBar
	}
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		return progressBar
	}
	return progressLines
}

// reporting counts the progress reports running, lastReport is when a
// command last printed a progress line of its own (Reported): a Heartbeat
// keeps silent while one runs or after such a line.
var (
	reporting  atomic.Int32
	lastReport atomic.Int64 // UnixNano
)

// Reported tells the Heartbeat that the command has just printed a
// progress line of its own.
func Reported() { lastReport.Store(time.Now().UnixNano()) }

// Progress lines: the first after lineFirst, then every lineEvery.
var lineFirst, lineEvery = 2 * time.Second, 5 * time.Second

// lineProgress prints a line of progress every few seconds.
type lineProgress struct {
	desc  string
	total int64
	n     atomic.Int64
	start time.Time
	stop  chan struct{}
	done  sync.WaitGroup
}

func startLines(desc string, total int) *lineProgress {
	l := &lineProgress{desc: desc, total: int64(total), start: time.Now(), stop: make(chan struct{})}
	reporting.Add(1)
	l.done.Add(1)
	go func() {
		defer l.done.Done()
		t := time.NewTimer(lineFirst)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
			}
			fmt.Fprintln(os.Stderr, l.line())
			t.Reset(lineEvery)
		}
	}()
	return l
}

// line is one progress line: "DESC: N of TOTAL (P%), ELAPSED", or
// "DESC: N, ELAPSED" without a known total.
func (l *lineProgress) line() string {
	n, el := l.n.Load(), time.Since(l.start).Round(time.Second)
	if l.total > 0 {
		return fmt.Sprintf("icn: %s: %d of %d (%.0f%%), %s", l.desc, n, l.total, 100*float64(n)/float64(l.total), el)
	}
	if n > 0 {
		return fmt.Sprintf("icn: %s: %d, %s", l.desc, n, el)
	}
	return fmt.Sprintf("icn: %s: %s", l.desc, el)
}

// Add advances the report; safe for concurrent use.
func (p *Progress) Add(n int) {
	switch {
	case p == nil:
	case p.bar != nil:
		_ = p.bar.Add(n)
	case p.lines != nil:
		p.lines.n.Add(int64(n))
	}
}

// Done finishes the report (once).
func (p *Progress) Done() {
	if p == nil {
		return
	}
	p.once.Do(func() {
		switch {
		case p.bar != nil:
			_ = p.bar.Finish()
			reporting.Add(-1)
		case p.lines != nil:
			close(p.lines.stop)
			p.lines.done.Wait()
			reporting.Add(-1)
		}
	})
}

// Heartbeat reports on stderr that a command (what: "icn alloc") still
// works ("icn alloc: working, 7s"), a line every few seconds once it took
// 2 s, while no Progress reports; the function it returns stops it. It
// prints nothing when Quiet or with ICN_PROGRESS=0.
func Heartbeat(what string) (stop func()) {
	if Quiet || progressMode() == progressOff {
		return func() {}
	}
	start, quit := time.Now(), make(chan struct{})
	var done sync.WaitGroup
	done.Add(1)
	go func() {
		defer done.Done()
		t := time.NewTimer(lineFirst)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
			}
			if reporting.Load() == 0 && time.Since(time.Unix(0, lastReport.Load())) >= lineEvery {
				fmt.Fprintf(os.Stderr, "%s: working, %s\n", what, time.Since(start).Round(time.Second))
			}
			t.Reset(lineEvery)
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			done.Wait()
		})
	}
}
