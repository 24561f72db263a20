// Package tabletest builds the routing tables of small tori, with and
// without failures and transit nodes, that the tests of their encodings
// share (the fabric manager's tables and their JSON).
package tabletest
