// Package shmem is icn's one-sided communication library in the model of
// the MVS-Express network (seed 003, SPEC §7): SPMD processes numbered
// 0..NPEs()-1, each exposing a local portion of memory that every other
// process can write (Put), read (Get) and update atomically, co-arrays
// exchanged by the collective CoarrayAll, Fence/Quiet, barriers over all
// or any list of processes, and WaitUntil on a local word — and the rest
// of OpenSHMEM 1.5: non-blocking puts, gets and fetching atomics, strided
// and signalled puts, 32-bit and float atomics, the wait and test family,
// locks, teams with their collectives (broadcast, reductions, collect,
// alltoall), contexts, Abort and GlobalExit; two transports
// behind one Transport interface (shared-memory mappings on one host, TCP
// between hosts), the launcher behind `icn shmem run`, and the Message Rate
// benchmark behind `icn shmem bench`.
//
// # Guarantees
//
// Completion. Put returns when the source may be reused, PutNBI at once
// (the source is read until the next Quiet); the data is at the target
// only after Quiet, a barrier or any collective. GetNBI and the
// non-blocking fetching atomics fill their destination by the next Quiet. Get returns with the data and sees every
// earlier put and atomic of the caller to that PE. Fetching atomics are
// complete when they return; non-fetching atomics (AtomicAdd, AtomicSet)
// complete like puts.
//
// Ordering. Operations of one PE to one target PE issued before Fence are
// applied before the ones issued after it (a flag put after data with
// Fence is never seen before the data). Without Fence no order is promised
// (the TCP transport happens to keep it). Nothing orders operations to
// different targets except Quiet.
//
// Visibility. After BarrierAll (or Barrier over a list, for operations
// between its members) every operation issued before the barrier by any
// member is visible to every member's plain loads. WaitUntil returns once
// its condition holds, and everything the writer put before (Fence) the
// satisfying write is then visible. An aligned 64-bit word put with
// PutValue/PutUint64 is written atomically: readers see the old or the new
// value, never a mix. Atomics on one word are linearisable across PEs.
//
// Faults. A PE that dies, exits without Finalize, stops (no heartbeat) or
// breaks a connection makes every other PE's next call, barrier or wait
// return a *PEError naming it within Options.Timeout (default 3 s) — never a
// hang; the error is then sticky. Mismatched collectives return a
// *CollectiveError. Misuse (PE out of range, access beyond a co-array,
// unaligned atomics, calls before Init or after Finalize) returns an error
// and never writes memory. See docs/shmem.md for the full account.
package shmem
