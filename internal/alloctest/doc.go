// Package alloctest provides a rule-free alloc.Router for the tests of
// packages that select nodes (sched): plain connectivity inside the set
// stands in for the routing rules.
package alloctest
