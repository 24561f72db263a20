package shmem

import (
	"errors"
	"fmt"
	"os"
	"sync"
)

// LocalJob is a job whose PEs are Worlds inside this process (one per
// goroutine), wired by a real transport: shm regions in a temporary
// directory, or TCP over loopback. It is for tests, Go benchmarks and
// tools; programs use Init under a launcher.
type LocalJob struct {
	Worlds []*World
	dir    string
	rdv    *Rendezvous
}

// NewLocal starts a LocalJob of n PEs.
func NewLocal(n int, opt Options) (*LocalJob, error) {
	if err := opt.validate(); err != nil {
		return nil, err
	}
	if n < 1 || n > maxPEs {
		return nil, fmt.Errorf("shmem: number of PEs %d out of range [1,%d]", n, maxPEs)
	}
	if opt.Transport == "" {
		opt.Transport = TransportShm
	}
	j := &LocalJob{Worlds: make([]*World, n)}
	job := newJobToken()
	base := Config{NPEs: n, Options: opt, Job: job}
	switch opt.Transport {
	case TransportShm:
		dir, err := os.MkdirTemp(shmBaseDir(), "icn-shmem-local-")
		if err != nil {
			return nil, fmt.Errorf("shmem: %w", err)
		}
		j.dir, base.Dir = dir, dir
	case TransportTCP:
		r, err := StartRendezvous("127.0.0.1:0", n, job)
		if err != nil {
			return nil, err
		}
		j.rdv, base.Rendezvous, base.Host = r, r.Addr(), "127.0.0.1"
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cfg := base
			cfg.Rank = i
			j.Worlds[i], errs[i] = Join(cfg)
		}(i)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		j.Close()
		return nil, err
	}
	return j, nil
}

// Run calls f on every PE concurrently and returns the errors joined.
func (j *LocalJob) Run(f func(w *World) error) error {
	errs := make([]error, len(j.Worlds))
	var wg sync.WaitGroup
	for i, w := range j.Worlds {
		wg.Add(1)
		go func(i int, w *World) {
			defer wg.Done()
			errs[i] = f(w)
		}(i, w)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Finalize finalizes every PE concurrently.
func (j *LocalJob) Finalize() error {
	return j.Run(func(w *World) error {
		if w == nil || w.state.Load() != stateRunning {
			return nil
		}
		return w.Finalize()
	})
}

// Close releases what Finalize leaves behind (worlds not finalized are
// shut down without the final barrier). Mapped regions stay mapped.
func (j *LocalJob) Close() {
	for _, w := range j.Worlds {
		if w != nil {
			w.shutdown(false)
		}
	}
	if j.rdv != nil {
		j.rdv.Close()
	}
	if j.dir != "" {
		os.RemoveAll(j.dir)
	}
}
