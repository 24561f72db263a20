// Package multiring owns non-switched multirings (seed 000 §2–3, §7): route
// tables, shortest / balanced / optimal route schedules, per-ring and
// effective capacity, the search for the best duplex multirings, cable cost,
// and the capacity of general non-switched ring networks (sparse multirings).
// It owns icn's one reader of ring steps (ParseSteps), its one route
// schedule type (Schedule, read from JSON by ParseSchedule); the
// slotted-ring simulator in package sim takes its schedules from here.
package multiring
