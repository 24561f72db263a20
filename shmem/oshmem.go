package shmem

import _ "embed"

// OSHMEMBenchSource is a C program for OpenSHMEM (Open MPI's OSHMEM:
// oshcc, oshrun) that measures the headline rows of RunBench — put and
// non-blocking put of 8 bytes, get, 1 MiB put, fetch-and-add, barrier,
// broadcast, reduce and alltoall — with the same counting method, so that
// `icn shmem bench --oshmem` compares both in one run. PE 0 prints one line
// "ICNOSH api size count seconds" per row; its arguments are the target
// duration in seconds and, optionally, the RunBench tests (BenchTests
// names, comma-separated) whose rows to measure.
//
//go:embed oshmem/bench.c
var OSHMEMBenchSource string

// OSHMEMRows is how many rows OSHMEMBenchSource prints for each RunBench
// test it covers.
var OSHMEMRows = map[string]int{"rate": 3, "latency": 1, "atomic": 1, "barrier": 1, "collective": 3}
