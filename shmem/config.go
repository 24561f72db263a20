package shmem

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Environment variables through which the launcher (icn shmem run, or
// Launch) tells a child process who it is and how to reach the others.
const (
	EnvRank        = "ICN_SHMEM_RANK"         // this PE, 0..NPEs-1
	EnvNPEs        = "ICN_SHMEM_NPES"         // number of PEs
	EnvTransport   = "ICN_SHMEM_TRANSPORT"    // "shm" or "tcp"
	EnvDir         = "ICN_SHMEM_DIR"          // shm: the job directory holding the regions
	EnvRendezvous  = "ICN_SHMEM_RENDEZVOUS"   // tcp: host:port of the launcher's rendezvous
	EnvHost        = "ICN_SHMEM_HOST"         // tcp: address this PE listens on
	EnvJob         = "ICN_SHMEM_JOB"          // job token, 16 hex digits
	EnvHeap        = "ICN_SHMEM_HEAP"         // bytes of local portion per PE
	EnvRing        = "ICN_SHMEM_RING"         // bytes of two-sided receive ring per sender
	EnvTimeout     = "ICN_SHMEM_TIMEOUT"      // fault-detection bound (Go duration)
	EnvInitTimeout = "ICN_SHMEM_INIT_TIMEOUT" // how long Init waits for the others
	EnvBind        = "ICN_SHMEM_BIND"         // process binding: "core" or "none"
	EnvLocalRank   = "ICN_SHMEM_LOCAL_RANK"   // index of this PE among the PEs of its host (for the binding)
)

// Defaults of Options.
const (
	DefaultHeap        = 64 << 20
	DefaultRing        = 256 << 10
	DefaultTimeout     = 3 * time.Second
	DefaultInitTimeout = 30 * time.Second
	DefaultBind        = BindAuto
)

// Transport names.
const (
	TransportShm = "shm"
	TransportTCP = "tcp"
)

// Options are the tunables shared by Launch, NewLocal and the environment.
type Options struct {
	Transport   string        // "shm" (default on one host) or "tcp"
	Heap        int           // local portion per PE in bytes (0: DefaultHeap)
	Ring        int           // two-sided receive ring per sender (0: DefaultRing)
	Timeout     time.Duration // fault detection bound (0: DefaultTimeout)
	InitTimeout time.Duration // how long Init waits for peers (0: DefaultInitTimeout)
	// Bind is the binding of launched processes (BindAuto, BindCore or
	// BindNone; "": DefaultBind). The launcher resolves auto; Init binds a
	// process the launcher told to; NewLocal's in-process PEs are never
	// bound.
	Bind string
}

func (o Options) withDefaults() Options {
	if o.Heap == 0 {
		o.Heap = DefaultHeap
	}
	if o.Ring == 0 {
		o.Ring = DefaultRing
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.InitTimeout == 0 {
		o.InitTimeout = DefaultInitTimeout
	}
	if o.Bind == "" {
		o.Bind = DefaultBind
	}
	return o
}

func (o Options) validate() error {
	if o.Transport != "" && o.Transport != TransportShm && o.Transport != TransportTCP {
		return fmt.Errorf("shmem: unknown transport %q (want shm or tcp)", o.Transport)
	}
	if o.Heap < 0 || o.Heap > 1<<40 {
		return fmt.Errorf("shmem: heap size %d out of range [0, 1 TiB]", o.Heap)
	}
	if o.Ring != 0 && (o.Ring < 64 || o.Ring%64 != 0 || o.Ring > 1<<30) {
		return fmt.Errorf("shmem: ring size %d must be a multiple of 64 in [64, 1 GiB]", o.Ring)
	}
	if o.Timeout < 0 || (o.Timeout > 0 && o.Timeout < 50*time.Millisecond) {
		return fmt.Errorf("shmem: fault timeout %v must be at least 50ms", o.Timeout)
	}
	if o.InitTimeout < 0 {
		return fmt.Errorf("shmem: init timeout %v is negative", o.InitTimeout)
	}
	if o.Bind != "" && o.Bind != BindAuto && o.Bind != BindCore && o.Bind != BindNone {
		return fmt.Errorf("shmem: unknown binding %q (want auto, core or none)", o.Bind)
	}
	return nil
}

// Config is everything one process needs to join a job.
type Config struct {
	Rank, NPEs int
	LocalRank  int // index of this PE among the PEs of its host (for Bind)
	Options
	Dir        string // shm
	Rendezvous string // tcp
	Host       string // tcp listen address
	Job        uint64
}

// Env renders c as environment assignments (KEY=VALUE).
func (c Config) Env() []string {
	o := c.Options.withDefaults()
	if o.Bind == BindAuto { // the launcher resolves auto (bindFor); unresolved, nothing is bound
		o.Bind = BindNone
	}
	env := []string{
		EnvRank + "=" + strconv.Itoa(c.Rank),
		EnvNPEs + "=" + strconv.Itoa(c.NPEs),
		EnvTransport + "=" + o.Transport,
		EnvJob + "=" + fmt.Sprintf("%016x", c.Job),
		EnvHeap + "=" + strconv.Itoa(o.Heap),
		EnvRing + "=" + strconv.Itoa(o.Ring),
		EnvTimeout + "=" + o.Timeout.String(),
		EnvInitTimeout + "=" + o.InitTimeout.String(),
		EnvBind + "=" + o.Bind,
		EnvLocalRank + "=" + strconv.Itoa(c.LocalRank),
	}
	if c.Dir != "" {
		env = append(env, EnvDir+"="+c.Dir)
	}
	if c.Rendezvous != "" {
		env = append(env, EnvRendezvous+"="+c.Rendezvous)
	}
	if c.Host != "" {
		env = append(env, EnvHost+"="+c.Host)
	}
	return env
}

// ConfigFromEnv reads a Config from the launcher's environment variables
// through getenv (os.Getenv in Init). ok is false when the process was not
// started by a launcher (no EnvRank), in which case Init makes a one-PE job.
func ConfigFromEnv(getenv func(string) string) (c Config, ok bool, err error) {
	rank := getenv(EnvRank)
	if rank == "" {
		return Config{}, false, nil
	}
	bad := func(name, v, why string) error {
		return fmt.Errorf("shmem: bad %s=%q from the launcher: %s", name, v, why)
	}
	atoi := func(name string, min, max int) (int, error) {
		v := strings.TrimSpace(getenv(name))
		x, err := strconv.Atoi(v)
		if err != nil {
			return 0, bad(name, v, "not an integer")
		}
		if x < min || x > max {
			return 0, bad(name, v, fmt.Sprintf("out of range [%d,%d]", min, max))
		}
		return x, nil
	}
	dur := func(name string, def time.Duration) (time.Duration, error) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return def, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return 0, bad(name, v, "not a positive duration")
		}
		return d, nil
	}
	if c.NPEs, err = atoi(EnvNPEs, 1, maxPEs); err != nil {
		return c, true, err
	}
	if c.Rank, err = atoi(EnvRank, 0, c.NPEs-1); err != nil {
		return c, true, err
	}
	c.Transport = strings.TrimSpace(getenv(EnvTransport))
	if c.Transport != TransportShm && c.Transport != TransportTCP {
		return c, true, bad(EnvTransport, c.Transport, "want shm or tcp")
	}
	jv := strings.TrimSpace(getenv(EnvJob))
	if c.Job, err = strconv.ParseUint(jv, 16, 64); err != nil || len(jv) != 16 {
		return c, true, bad(EnvJob, jv, "want 16 hex digits")
	}
	if getenv(EnvHeap) != "" {
		if c.Heap, err = atoi(EnvHeap, 0, 1<<40); err != nil {
			return c, true, err
		}
	}
	if getenv(EnvRing) != "" {
		if c.Ring, err = atoi(EnvRing, 64, 1<<30); err != nil {
			return c, true, err
		}
	}
	if c.Timeout, err = dur(EnvTimeout, DefaultTimeout); err != nil {
		return c, true, err
	}
	if c.InitTimeout, err = dur(EnvInitTimeout, DefaultInitTimeout); err != nil {
		return c, true, err
	}
	if c.Bind, c.LocalRank, err = bindFromEnv(getenv, atoi); err != nil {
		return c, true, err
	}
	c.Dir = getenv(EnvDir)
	c.Rendezvous = getenv(EnvRendezvous)
	c.Host = getenv(EnvHost)
	switch c.Transport {
	case TransportShm:
		if c.Dir == "" {
			return c, true, bad(EnvDir, "", "the shm transport needs the job directory")
		}
	case TransportTCP:
		if c.Rendezvous == "" {
			return c, true, bad(EnvRendezvous, "", "the tcp transport needs the rendezvous address")
		}
	}
	if err := c.Options.validate(); err != nil {
		return c, true, err
	}
	return c, true, nil
}

// bindFromEnv reads the binding and the local rank (both optional: a
// launcher that does not set them leaves the process unbound).
func bindFromEnv(getenv func(string) string, atoi func(string, int, int) (int, error)) (string, int, error) {
	bind := strings.TrimSpace(getenv(EnvBind))
	if bind == "" {
		return BindNone, 0, nil
	}
	if bind != BindCore && bind != BindNone {
		return "", 0, fmt.Errorf("shmem: bad %s=%q from the launcher: want core or none", EnvBind, bind)
	}
	if getenv(EnvLocalRank) == "" {
		return bind, 0, nil
	}
	local, err := atoi(EnvLocalRank, 0, maxPEs-1)
	return bind, local, err
}

func getenvOS(k string) string { return os.Getenv(k) }
