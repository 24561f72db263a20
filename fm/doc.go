// Package fm is the fabric manager: a service that keeps the fabric, its
// failures, placed jobs with their routing tables and multicast groups in
// a transactional store (fm/store: a bbolt file, or an etcd cluster shared
// by a leader and its standbys), and that fm/api serves over HTTP.
package fm
