// Package routing owns deterministic routing on multidimensional tori under
// the Angara / IBM Blue Gene rules (direction order, direction bits, FS/LS
// steps): the routing graph RG with history-carrying vertices, reachability
// of node sets under failures, BFS, baseline and genetic routing tables
// with their load figures, and the channel-dependency (deadlock) check of a table.
package routing
