package shmem

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"unsafe"
)

// Process binding (Options.Bind), as mpirun's --bind-to: with BindCore the
// launcher gives every PE its index among the PEs of its host, and Init pins
// every thread of PE number i on the host to the i-th CPU (mod their count)
// of the CPUs the process may use, before it joins. The PEs' spinning waits
// then never compete with each other for a CPU, and the scheduler does not
// move a waiting PE away from the cache that holds its signal slots.
const (
	BindAuto = "auto" // core on shm, none on TCP
	BindCore = "core" // one CPU per PE, round robin over the allowed CPUs
	BindNone = "none" // leave placement to the operating system
)

// cpuMask is a CPU set in the form sched_setaffinity takes (1024 CPUs).
type cpuMask [16]uint64

// allowedCPUs lists the CPUs the calling thread may run on, in increasing
// order.
func allowedCPUs() ([]int, error) { return threadCPUs(0) }

// threadCPUs lists the CPUs thread tid (0: the calling thread) may run on
// (sched_getaffinity), in increasing order.
func threadCPUs(tid int) ([]int, error) {
	var m cpuMask
	_, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, uintptr(tid), unsafe.Sizeof(m), uintptr(unsafe.Pointer(&m)))
	if e != 0 {
		return nil, fmt.Errorf("sched_getaffinity: %w", e)
	}
	var cpus []int
	for i := range 64 * len(m) {
		if m[i/64]&(1<<(i%64)) != 0 {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("sched_getaffinity: no CPU allowed")
	}
	return cpus, nil
}

// setAffinity pins thread tid (0: the calling thread) to cpu.
func setAffinity(tid, cpu int) error {
	var m cpuMask
	m[cpu/64] |= 1 << (cpu % 64)
	if err := setMask(tid, &m); err != nil {
		return fmt.Errorf("sched_setaffinity(thread %d, CPU %d): %w", tid, cpu, err)
	}
	return nil
}

// setMask lets thread tid (0: the calling thread) run on the CPUs of m.
// A thread that has just exited (ESRCH) is no error.
func setMask(tid int, m *cpuMask) error {
	_, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, uintptr(tid), unsafe.Sizeof(*m), uintptr(unsafe.Pointer(m)))
	if e != 0 && e != syscall.ESRCH {
		return e
	}
	return nil
}

// threads lists the thread ids of this process.
func threads() ([]int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, fmt.Errorf("listing this process's threads: %w", err)
	}
	var tids []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// bindProcess pins every thread of this process to cpu. Threads started
// later inherit the mask of the thread that starts them; the thread list
// is read again until a pass finds no thread it had not pinned, so that a
// thread the runtime starts meanwhile from an unpinned one is not missed.
func bindProcess(cpu int) error {
	var done []int
	for {
		tids, err := threads()
		if err != nil {
			return err
		}
		fresh := false
		for _, tid := range tids {
			if slices.Contains(done, tid) {
				continue
			}
			if err := setAffinity(tid, cpu); err != nil {
				return err
			}
			done, fresh = append(done, tid), true
		}
		if !fresh {
			return nil
		}
	}
}

// bindCPU is the CPU of the PE with index local among the PEs of its host:
// the local-th allowed CPU, round robin.
func bindCPU(local int) (int, error) {
	cpus, err := allowedCPUs()
	if err != nil {
		return 0, err
	}
	return cpus[local%len(cpus)], nil
}

// applyBind pins this process as bind says for the PE with index local on
// its host and returns the CPU (-1 when not bound, also after an error). Go's runtime would
// lower GOMAXPROCS to the one CPU by itself within about a second; unless
// the GOMAXPROCS variable fixes it, that is done at once, so that a
// benchmark does not start with two Ps sharing the CPU and lose one
// mid-run.
func applyBind(bind string, local int) (int, error) {
	if bind != BindCore {
		return -1, nil
	}
	cpu, err := bindCPU(local)
	if err != nil {
		return -1, fmt.Errorf("binding to a core: %w", err)
	}
	if err := bindProcess(cpu); err != nil {
		return -1, fmt.Errorf("binding to CPU %d: %w", cpu, err)
	}
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.SetDefaultGOMAXPROCS()
	}
	return cpu, nil
}
