// Package store keeps the fabric manager's records, each framed with its
// checksum, with the checks a start and `icn serve --check` run and the
// migration of older schemas, on a bbolt file or under an etcd key prefix
// (elections, writes fenced by the leader's lease, chunked large values,
// following), behind one typed transaction.
package store
