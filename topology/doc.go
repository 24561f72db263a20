// Package topology is the network model every other icn package shares:
// nodes (endpoints and switches) with numbered ports joined by duplex links,
// optional coordinates and link attributes, failed links and nodes; the
// generators behind spec strings (torus, mesh, hypercube, multiring, fat
// trees, dragonfly, …); JSON/YAML/DOT/ibnetdiscover import and export; and
// the classic metrics (diameter, average distance, bisection width, edge
// connectivity, cost) and hypercube embeddings.
package topology
