package cli

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// captureStderr runs f with os.Stderr on a pipe and returns what it wrote.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	out := make(chan string)
	go func() {
		var b strings.Builder
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		out <- b.String()
	}()
	f()
	os.Stderr = saved
	w.Close()
	return <-out
}

// On a stderr that is not a terminal, a long run reports in lines: the
// heartbeat while nothing else reports, a Progress's count and share
// while it runs, nothing with Quiet or ICN_PROGRESS=0.
func TestProgressLinesOffTerminal(t *testing.T) {
	t.Setenv("ICN_PROGRESS", "")
	saved1, saved2 := lineFirst, lineEvery
	lineFirst, lineEvery = 50*time.Millisecond, 100*time.Millisecond
	defer func() { lineFirst, lineEvery = saved1, saved2 }()

	got := captureStderr(t, func() {
		stop := Heartbeat("icn test")
		time.Sleep(270 * time.Millisecond) // lines at 50, 150, 250 ms
		p := NewProgress(10, "steps", false)
		p.Add(4)
		time.Sleep(120 * time.Millisecond) // the progress line at 50 ms; the heartbeat keeps silent
		p.Done()
		p.Done()
		stop()
		stop()
	})
	beats := regexp.MustCompile(`(?m)^icn test: working, \d+s$`).FindAllString(got, -1)
	steps := regexp.MustCompile(`(?m)^icn: steps: 4 of 10 \(40%\), \d+s$`).FindAllString(got, -1)
	if len(beats) < 2 || len(beats) > 4 || len(steps) != 1 || strings.Count(got, "\n") != len(beats)+len(steps) {
		t.Fatalf("stderr:\n%s", got)
	}

	// A command's own progress line silences the next beat.
	got = captureStderr(t, func() {
		stop := Heartbeat("icn test")
		for range 6 {
			Reported()
			time.Sleep(40 * time.Millisecond)
		}
		stop()
	})
	if got != "" {
		t.Fatalf("heartbeat beside the command's own lines: %q", got)
	}

	for _, env := range []string{"0", ""} {
		Quiet = env == ""
		t.Setenv("ICN_PROGRESS", env)
		if got := captureStderr(t, func() {
			stop := Heartbeat("icn test")
			p := NewProgress(-1, "steps", false)
			time.Sleep(120 * time.Millisecond)
			p.Done()
			time.Sleep(120 * time.Millisecond)
			stop()
		}); got != "" {
			t.Fatalf("ICN_PROGRESS=%q quiet %v: %q", env, Quiet, got)
		}
	}
	Quiet = false
}
