package shmem

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Rendezvous is the launcher's meeting point for a tcp job: every PE
// connects, registers the address it listens on, and receives the table of
// all addresses once all have registered. The connections stay open; Fail
// broadcasts a failure notice on them.
type Rendezvous struct {
	ln      net.Listener
	n       int
	job     uint64
	mu      sync.Mutex
	conns   []net.Conn
	addrs   []string
	got     int
	done    chan struct{}
	fails   []string
	reports []Report
	aborts  []AbortRecord
	ended   []chan struct{} // closed when PE i's connection ends
}

// Report is a peer failure that a PE observed and told the launcher.
type Report struct {
	By, PE int    // the reporting PE and the PE it saw fail
	Reason string // what it saw
}

// parseReport reads "BY PE reason".
func parseReport(fields []string, n int) (Report, bool) {
	if len(fields) < 2 {
		return Report{}, false
	}
	by, err1 := strconv.Atoi(fields[0])
	pe, err2 := strconv.Atoi(fields[1])
	if err1 != nil || err2 != nil || by < 0 || by >= n || pe < 0 || pe >= n {
		return Report{}, false
	}
	return Report{By: by, PE: pe, Reason: strings.Join(fields[2:], " ")}, true
}

// parseAbort reads "PE STATUS reason".
func parseAbort(fields []string, n int) (AbortRecord, bool) {
	if len(fields) < 2 {
		return AbortRecord{}, false
	}
	pe, err1 := strconv.Atoi(fields[0])
	st, err2 := strconv.Atoi(fields[1])
	if err1 != nil || err2 != nil || pe < 0 || pe >= n || st < 0 || st > 255 {
		return AbortRecord{}, false
	}
	return AbortRecord{PE: pe, Status: st, Reason: strings.Join(fields[2:], " ")}, true
}

// Aborts returns the aborts the PEs recorded, after waiting up to wait for
// the connection of PE pe (of every registered PE if pe < 0) to end, so
// that the last words of an exited PE are read.
func (r *Rendezvous) Aborts(pe int, wait time.Duration) []AbortRecord {
	deadline := time.After(wait)
	for i, ch := range r.ended {
		r.mu.Lock()
		registered := r.conns[i] != nil
		r.mu.Unlock()
		if !registered || (pe >= 0 && i != pe) {
			continue
		}
		select {
		case <-ch:
		case <-deadline:
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]AbortRecord(nil), r.aborts...)
}

// Reports returns the failures the PEs reported so far.
func (r *Rendezvous) Reports() []Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Report(nil), r.reports...)
}

// StartRendezvous listens on addr (host:port, port 0 for any) for a job of
// n PEs with the given token.
func StartRendezvous(addr string, n int, job uint64) (*Rendezvous, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("shmem: rendezvous: %w", err)
	}
	r := &Rendezvous{ln: ln, n: n, job: job, conns: make([]net.Conn, n), addrs: make([]string, n), done: make(chan struct{}), ended: make([]chan struct{}, n)}
	for i := range r.ended {
		r.ended[i] = make(chan struct{})
	}
	go r.accept()
	return r, nil
}

// Addr is the address PEs dial.
func (r *Rendezvous) Addr() string { return r.ln.Addr().String() }

func (r *Rendezvous) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		go r.register(c)
	}
}

func (r *Rendezvous) register(c net.Conn) {
	c.SetReadDeadline(time.Now().Add(time.Minute))
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	f := strings.Fields(line)
	refuse := func(why string) {
		fmt.Fprintf(c, "error %s\n", why)
		c.Close()
	}
	if len(f) != 4 || f[0] != "hello" {
		refuse("malformed hello")
		return
	}
	if job, err := strconv.ParseUint(f[1], 16, 64); err != nil || job != r.job {
		refuse("wrong job token")
		return
	}
	rank, err := strconv.Atoi(f[2])
	if err != nil || rank < 0 || rank >= r.n {
		refuse("rank out of range")
		return
	}
	if _, _, err := net.SplitHostPort(f[3]); err != nil {
		refuse("bad address")
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns[rank] != nil {
		r.mu.Unlock()
		refuse(fmt.Sprintf("rank %d registered twice", rank))
		r.mu.Lock()
		return
	}
	r.conns[rank] = c
	r.addrs[rank] = f[3]
	go r.listen(br, r.ended[rank])
	for _, msg := range r.fails {
		fmt.Fprint(c, msg)
	}
	r.got++
	if r.got == r.n {
		table := "table " + strings.Join(r.addrs, " ") + "\n"
		for _, cc := range r.conns {
			cc.SetWriteDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprint(cc, table)
			cc.SetWriteDeadline(time.Time{})
		}
		close(r.done)
	}
}

// Fail tells every registered PE (and every later one) that PE pe failed.
func (r *Rendezvous) Fail(pe int, reason string) {
	msg := fmt.Sprintf("fail %d %s\n", pe, strings.Join(strings.Fields(reason), " "))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fails = append(r.fails, msg)
	for _, c := range r.conns {
		if c != nil {
			c.SetWriteDeadline(time.Now().Add(time.Second))
			fmt.Fprint(c, msg)
		}
	}
}

// Close stops the rendezvous and closes every connection.
func (r *Rendezvous) Close() {
	r.ln.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.conns {
		if c != nil {
			c.Close()
		}
	}
}

// listen collects the reports and aborts a PE sends after registering.
func (r *Rendezvous) listen(br *bufio.Reader, ended chan struct{}) {
	defer close(ended)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "abort" {
			if a, ok := parseAbort(f[1:], r.n); ok {
				r.mu.Lock()
				r.aborts = append(r.aborts, a)
				r.mu.Unlock()
			}
		}
		if len(f) > 0 && f[0] == "report" {
			if rep, ok := parseReport(f[1:], r.n); ok {
				r.mu.Lock()
				r.reports = append(r.reports, rep)
				r.mu.Unlock()
			}
		}
	}
}
