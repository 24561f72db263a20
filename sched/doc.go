// Package sched simulates a cluster working through a job queue on a torus
// (seed 001 ch. 5): job streams (synthetic, Standard Workload Format), queue
// policies (window, EASY backfilling) and the resulting utilization and
// waiting figures.
package sched
