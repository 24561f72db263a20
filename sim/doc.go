// Package sim owns the cycle-level interconnect simulator: input-queued
// virtual-channel routers with credit flow control (wormhole, virtual
// cut-through, store-and-forward; dateline or bubble deadlock avoidance),
// synthetic and trace traffic, the warm-up/measurement/drain methodology,
// saturation search, deadlock detection, message-step runs for collectives,
// and the slotted-ring simulator of non-switched multirings. The core is
// deterministic and driven by Tick; it owns no clock and no goroutines.
package sim
