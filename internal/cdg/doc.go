// Package cdg holds channel dependency graphs: a directed graph whose
// vertices are channels (or channel×lane pairs) and whose edges say "a packet
// holding channel a may wait for channel b". By Dally and Seitz a routing
// function is deadlock-free if this graph is acyclic; with bubble flow control
// on rings, cycles made only of edges tagged Straight are tolerated.
package cdg
