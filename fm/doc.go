// Package fm is the fabric manager: a service that keeps the fabric, its
// failures, placed jobs with their routing tables and multicast groups in
// an embedded transactional store, and serves them over an HTTP JSON API,
// Prometheus metrics and a web page.
package fm
