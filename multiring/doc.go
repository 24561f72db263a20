// Package multiring owns non-switched multirings (seed 000 §2–3, §7): route
// tables, shortest / balanced / optimal route schedules, per-ring and
// effective capacity, the search for the best duplex multirings, cable cost,
// and the capacity of general non-switched ring networks (sparse multirings).
package multiring
