// Package etcdtest starts real etcd clusters on loopback for tests: each
// member an etcd process (Debian's etcd-server) with its own data
// directory and ports, which a test can kill, restart, freeze and thaw.
package etcdtest
