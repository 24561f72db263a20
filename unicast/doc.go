// Package unicast owns unicast routing of switched fabrics: LID assignment,
// the routing engines minhop, updn, ftree, sssp, dfsssp and dor (values of
// one registry, Engines), linear forwarding tables in OpenSM's
// opensm-lfts.dump format (export and import), and audits of any table set
// (reachability, path lengths, link loads, per-lane channel-dependency
// cycles, permutation contention).
package unicast
