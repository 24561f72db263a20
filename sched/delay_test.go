package sched

import (
	"math"
	"os"
	"strings"
	"testing"
)

func TestParseStartDelays(t *testing.T) {
	got, err := ParseStartDelays(strings.NewReader("# id delay\n1 30\n\n2 1.5m\n7 0\n"), "d.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[1] != 30 || got[2] != 90 || got[7] != 0 {
		t.Fatalf("got %v", got)
	}
	for _, tc := range []struct{ text, want string }{
		{"1\n", "d.txt:1: want JOB-ID DELAY"},
		{"x 3\n", "d.txt:1: job id \"x\""},
		{"1 2\n\n1 3\n", "d.txt:3: job 1 listed twice"},
		{"1 -3\n", "d.txt:1: \"-3\""},
		{"1 NaN\n", "d.txt:1: \"NaN\""},
		{"1 Inf\n", "d.txt:1: \"Inf\""},
		{"1 3 4\n", "got 3 fields"},
	} {
		_, err := ParseStartDelays(strings.NewReader(tc.text), "d.txt")
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line containing %q", tc.text, err, tc.want)
		}
	}
}

func FuzzParseStartDelays(f *testing.F) {
	b, err := os.ReadFile("testdata/start_delays.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	f.Add("1 1e308d\n")
	f.Add("-5 0\n# x\n3 2mo\n")
	f.Fuzz(func(t *testing.T, text string) {
		d, err := ParseStartDelays(strings.NewReader(text), "fuzz")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		for id, v := range d {
			if !(v >= 0) || math.IsInf(v, 0) {
				t.Fatalf("job %d: delay %v", id, v)
			}
		}
	})
}
