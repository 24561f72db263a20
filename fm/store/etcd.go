package store

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// An etcd store keeps the buckets of a bbolt store under a key prefix:
//
//	PREFIX/meta/KEY            the meta bucket, as in bbolt
//	PREFIX/jobs/ID             8-byte ids as 16 hex digits (the order is kept)
//	PREFIX/tables/ID           a job's routes, or a reference to their chunks
//	PREFIX/audit/SEQ
//	PREFIX/fabric/current, PREFIX/groups/ID, PREFIX/requests/ID
//	PREFIX/chunks/SET/NNNNNN   pieces of values too large for one request
//	PREFIX/ctl/commit          the commit marker (fencing, see update)
//	PREFIX/ctl/seq/BUCKET      bucket sequences (the audit log's)
//	PREFIX/election/LEASE      candidates for leadership (election.go)
//
// Every value is the same byte string bbolt would hold, so records are
// checked the same way on both stores. A value over inlineMax (a large
// job's routes) is written as chunks of chunkSize bytes, each in a
// transaction of its own before the transaction that refers to it
// (etcd refuses requests over 1.5 MiB by default); the key then holds
// refMark followed by the JSON of a chunkRef. Chunk sets no key refers
// to any more are deleted by the leader (Sweep).

const (
	inlineMax = 256 << 10
	chunkSize = 1000 << 10
	refMark   = 0x02
	// pageSize is how many keys a range read asks for at once;
	// chunksPerRead how many chunks.
	pageSize      = 256
	chunksPerRead = 8
	// commitTimeout bounds a commit, its retries and the resolution of
	// an ambiguous outcome, whatever the caller's context.
	commitTimeout = 15 * time.Second
)

// numericBuckets have 8-byte big-endian keys, kept as 16 hex digits.
var numericBuckets = map[string]bool{"jobs": true, "tables": true, "audit": true, "loads": true}

// blobBuckets may hold values larger than inlineMax.
var blobBuckets = map[string]bool{"tables": true}

// EtcdConfig locates a store on an etcd cluster.
type EtcdConfig struct {
	Endpoints []string // host:port of the members
	Prefix    string   // key prefix, without a trailing slash
	// TLS: the CA that signs the members' certificates, and the client's
	// certificate and key (all PEM files; empty: plain HTTP).
	CACert, Cert, Key string
	DialTimeout       time.Duration // 0: 5 s
	// MaxTxnOps and MaxRequestBytes are the cluster's limits
	// (--max-txn-ops, --max-request-bytes; 0: etcd's defaults).
	MaxTxnOps       int
	MaxRequestBytes int
}

// URL gives the config back as an etcd:// address.
func (c EtcdConfig) URL() string {
	return "etcd://" + strings.Join(c.Endpoints, ",") + "/" + c.Prefix
}

// ParseEtcdURL reads etcd://HOST:PORT[,HOST:PORT…]/PREFIX, optionally
// followed by ?max-txn-ops=N&max-request-bytes=N (the cluster's limits
// when they differ from etcd's defaults).
func ParseEtcdURL(s string) (EtcdConfig, error) {
	var c EtcdConfig
	rest, ok := strings.CutPrefix(s, "etcd://")
	if !ok {
		return c, fmt.Errorf("store %q: want etcd://HOST:PORT[,HOST:PORT…]/PREFIX", s)
	}
	rest, query, _ := strings.Cut(rest, "?")
	hosts, prefix, _ := strings.Cut(rest, "/")
	if hosts == "" {
		return c, fmt.Errorf("store %q: no etcd endpoint (want etcd://HOST:PORT[,HOST:PORT…]/PREFIX)", s)
	}
	for _, h := range strings.Split(hosts, ",") {
		host, port, err := net.SplitHostPort(h)
		if err != nil || host == "" {
			return c, fmt.Errorf("store %q: endpoint %q is not HOST:PORT", s, h)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return c, fmt.Errorf("store %q: endpoint %q: port %q is not 1..65535", s, h, port)
		}
		c.Endpoints = append(c.Endpoints, h)
	}
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return c, fmt.Errorf("store %q: no key prefix (want etcd://HOST:PORT/PREFIX, e.g. etcd://127.0.0.1:2379/icn)", s)
	}
	for _, r := range prefix {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/", r)) {
			return c, fmt.Errorf("store %q: prefix %q: use letters, digits and . _ - / only", s, prefix)
		}
	}
	if strings.Contains(prefix, "//") {
		return c, fmt.Errorf("store %q: prefix %q has an empty component", s, prefix)
	}
	c.Prefix = prefix
	if query != "" {
		q, err := url.ParseQuery(query)
		if err != nil {
			return c, fmt.Errorf("store %q: %v", s, err)
		}
		for k, vs := range q {
			n, err := strconv.Atoi(vs[len(vs)-1])
			switch {
			case err != nil || n < 1:
				return c, fmt.Errorf("store %q: %s=%q is not a positive number", s, k, vs[len(vs)-1])
			case k == "max-txn-ops":
				c.MaxTxnOps = n
			case k == "max-request-bytes":
				c.MaxRequestBytes = n
			default:
				return c, fmt.Errorf("store %q: unknown option %q (known: max-txn-ops, max-request-bytes)", s, k)
			}
		}
	}
	return c, nil
}

// Etcd is the etcd backend. Reads run on any instance; writes need the
// leadership the instance won (Lead), and every write transaction is
// conditioned on it (fencing): a deposed leader can never land a write.
type Etcd struct {
	cli *clientv3.Client
	cfg EtcdConfig
	pre string // prefix + "/"

	// wmu serialises write transactions; the fields below it are the
	// leader's view of the store, valid while lead is set.
	wmu  sync.Mutex
	lead *Leadership
	last int64             // mod revision of the commit marker after our last commit
	n    uint64            // commits in this term
	seqs map[string]uint64 // bucket sequences as committed
	sets uint64            // chunk sets written in this term

	stMu   sync.Mutex
	staged map[string]bool // chunk sets written whose transaction is not committed yet
}

// OpenEtcd connects to the cluster and checks that it answers.
func OpenEtcd(ctx context.Context, cfg EtcdConfig) (*Etcd, error) {
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.MaxTxnOps == 0 {
		cfg.MaxTxnOps = 128
	}
	if cfg.MaxRequestBytes == 0 {
		cfg.MaxRequestBytes = 1536 << 10
	}
	cc := clientv3.Config{Endpoints: cfg.Endpoints, DialTimeout: cfg.DialTimeout, Logger: zap.NewNop(),
		DialKeepAliveTime: 2 * time.Second, DialKeepAliveTimeout: 2 * time.Second,
		MaxCallSendMsgSize: cfg.MaxRequestBytes + 64<<10, MaxCallRecvMsgSize: 64 << 20}
	if cfg.CACert != "" || cfg.Cert != "" {
		tc, err := tlsConfig(cfg)
		if err != nil {
			return nil, err
		}
		cc.TLS = tc
	}
	cli, err := clientv3.New(cc)
	if err != nil {
		return nil, fmt.Errorf("%w: etcd at %s: %v", ErrUnavailable, strings.Join(cfg.Endpoints, ","), err)
	}
	s := &Etcd{cli: cli, cfg: cfg, pre: cfg.Prefix + "/", staged: map[string]bool{}}
	cctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	if _, err := cli.Get(cctx, s.pre+"meta/magic", clientv3.WithCountOnly()); err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w: etcd at %s does not answer: %v", ErrUnavailable, strings.Join(cfg.Endpoints, ","), describe(err))
	}
	return s, nil
}

func tlsConfig(cfg EtcdConfig) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CACert != "" {
		pem, err := os.ReadFile(cfg.CACert)
		if err != nil {
			return nil, fmt.Errorf("--etcd-cacert: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--etcd-cacert %s: no PEM certificate in the file", cfg.CACert)
		}
		tc.RootCAs = pool
	}
	if (cfg.Cert == "") != (cfg.Key == "") {
		return nil, fmt.Errorf("give both --etcd-cert and --etcd-key, or neither")
	}
	if cfg.Cert != "" {
		pair, err := tls.LoadX509KeyPair(cfg.Cert, cfg.Key)
		if err != nil {
			return nil, fmt.Errorf("--etcd-cert/--etcd-key: %v", err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	return tc, nil
}

// Close closes the connection (a leadership held is given up first).
func (s *Etcd) Close() error {
	s.wmu.Lock()
	l := s.lead
	s.lead = nil
	s.wmu.Unlock()
	if l != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		l.Resign(ctx)
		cancel()
	}
	return s.cli.Close()
}

// Config returns the store's configuration.
func (s *Etcd) Config() EtcdConfig { return s.cfg }

// describe shortens etcd client errors to their message.
func describe(err error) string {
	if st, ok := status.FromError(err); ok {
		return st.Message()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer in time"
	}
	return err.Error()
}

// unavailable reports whether err says the cluster could not be reached
// or could not commit (as opposed to a refused request).
func unavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return true
	}
	if errors.Is(err, rpctypes.ErrTimeout) || errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail) ||
		errors.Is(err, rpctypes.ErrTimeoutDueToConnectionLost) || errors.Is(err, rpctypes.ErrNoLeader) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted:
		return true
	}
	return false
}

// wrap turns a client error into a store error naming the cluster.
func (s *Etcd) wrap(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, rpctypes.ErrRequestTooLarge) || errors.Is(err, rpctypes.ErrTooManyOps) {
		return fmt.Errorf("%w: etcd refused it: %s (raise the cluster's --max-request-bytes / --max-txn-ops and give them in the store address)", ErrTooLarge, describe(err))
	}
	if unavailable(err) {
		return fmt.Errorf("%w: etcd at %s: %s", ErrUnavailable, strings.Join(s.cfg.Endpoints, ","), describe(err))
	}
	return fmt.Errorf("etcd: %s", describe(err))
}

// ---- keys ----

func (s *Etcd) bucketPrefix(bucket []byte) string { return s.pre + string(bucket) + "/" }

func (s *Etcd) key(bucket, key []byte) string {
	if numericBuckets[string(bucket)] && len(key) == 8 {
		return s.bucketPrefix(bucket) + hex.EncodeToString(key)
	}
	return s.bucketPrefix(bucket) + string(key)
}

// splitKey returns the bucket and key of a full etcd key under the
// prefix (ok false for keys outside the buckets: ctl, chunks, election).
func (s *Etcd) splitKey(full []byte) (bucket string, key []byte, ok bool) {
	rest, found := bytes.CutPrefix(full, []byte(s.pre))
	if !found {
		return "", nil, false
	}
	b, k, found := bytes.Cut(rest, []byte("/"))
	if !found {
		return "", nil, false
	}
	switch string(b) {
	case "ctl", "chunks", "election":
		return "", nil, false
	}
	bucket = string(b)
	if numericBuckets[bucket] && len(k) == 16 {
		if d, err := hex.DecodeString(string(k)); err == nil {
			return bucket, d, true
		}
	}
	return bucket, slices.Clone(k), true
}

func (s *Etcd) commitKey() string             { return s.pre + "ctl/commit" }
func (s *Etcd) seqKey(bucket string) string   { return s.pre + "ctl/seq/" + bucket }
func (s *Etcd) chunkPrefix(set string) string { return s.pre + "chunks/" + set + "/" }

// chunkRef is what a key holds in place of a value kept in chunks.
type chunkRef struct {
	Set    string `json:"set"`
	Chunks int    `json:"chunks"`
	Bytes  int    `json:"bytes"`
	CRC    uint32 `json:"crc32c"`
}

func parseRef(v []byte) (*chunkRef, error) {
	if len(v) == 0 || v[0] != refMark {
		return nil, nil
	}
	var r chunkRef
	if err := json.Unmarshal(v[1:], &r); err != nil || r.Set == "" || r.Chunks < 1 || r.Bytes < 0 {
		return nil, fmt.Errorf("damaged chunk reference (%d bytes)", len(v))
	}
	return &r, nil
}

// resolve returns the value a key holds: itself, or the value assembled
// from its chunks (read at rev; 0: latest), checked against the
// reference's length and checksum.
func (s *Etcd) resolve(ctx context.Context, bucket string, v []byte, rev int64) ([]byte, error) {
	if !blobBuckets[bucket] {
		return v, nil
	}
	ref, err := parseRef(v)
	if err != nil || ref == nil {
		return v, err
	}
	// A few chunks per request: a 4 096-node job's routes are 80 MB.
	prefix := s.chunkPrefix(ref.Set)
	start, end := prefix, clientv3.GetPrefixRangeEnd(prefix)
	out := make([]byte, 0, ref.Bytes)
	n := 0
	for {
		opts := []clientv3.OpOption{clientv3.WithRange(end), clientv3.WithLimit(chunksPerRead),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)}
		if rev > 0 {
			opts = append(opts, clientv3.WithRev(rev))
		}
		resp, err := s.cli.Get(ctx, start, opts...)
		if err != nil {
			return nil, s.wrap(err)
		}
		for _, kv := range resp.Kvs {
			out = append(out, kv.Value...)
		}
		n += len(resp.Kvs)
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	if n != ref.Chunks {
		return nil, fmt.Errorf("chunk set %s: %d of %d chunks present", ref.Set, n, ref.Chunks)
	}
	if len(out) != ref.Bytes || crc32.Checksum(out, castagnoli) != ref.CRC {
		return nil, fmt.Errorf("chunk set %s: %d bytes, checksum mismatch against its reference (%d bytes): the chunks were altered", ref.Set, len(out), ref.Bytes)
	}
	return out, nil
}

// ---- transactions ----

// etcdTx is a read transaction pinned to one revision, or a write
// transaction that buffers its writes for one conditioned etcd
// transaction at commit.
type etcdTx struct {
	s     *Etcd
	ctx   context.Context
	write bool
	// create: the transaction initialises the prefix (commits only if
	// no store is there yet), without leadership.
	create bool
	rev    int64 // read revision (0 until the first read of a read transaction)

	puts   map[string][]byte // full key → value (nil value: delete)
	order  []string          // keys in the order first written
	seqs   map[string]uint64 // sequences advanced in this transaction
	blobs  map[string][]byte // full key → value to be written as chunks
	absent []string          // full keys the commit requires absent
}

func (t *etcdTx) readOpts(opts ...clientv3.OpOption) []clientv3.OpOption {
	if !t.write && t.rev > 0 {
		opts = append(opts, clientv3.WithRev(t.rev))
	}
	return opts
}

// pin fixes a read transaction's revision to that of its first answer.
func (t *etcdTx) pin(h int64) {
	if !t.write && t.rev == 0 {
		t.rev = h
	}
}

// Peek implements kvTx: etcd's values are copies already.
func (t *etcdTx) Peek(bucket, key []byte) ([]byte, error) { return t.Get(bucket, key) }

func (t *etcdTx) Get(bucket, key []byte) ([]byte, error) {
	k := t.s.key(bucket, key)
	if t.write {
		if v, ok := t.puts[k]; ok {
			if v == nil {
				return nil, nil
			}
			if b, ok := t.blobs[k]; ok {
				return slices.Clone(b), nil
			}
			return slices.Clone(v), nil
		}
	}
	resp, err := t.s.cli.Get(t.ctx, k, t.readOpts()...)
	if err != nil {
		return nil, t.s.wrap(err)
	}
	t.pin(resp.Header.Revision)
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	return t.s.resolve(t.ctx, string(bucket), resp.Kvs[0].Value, t.rev)
}

func (t *etcdTx) Put(bucket, key, value []byte) error {
	if !t.write {
		return fmt.Errorf("write in a read transaction")
	}
	k := t.s.key(bucket, key)
	t.touch(k)
	if blobBuckets[string(bucket)] && len(value) > inlineMax {
		if t.blobs == nil {
			t.blobs = map[string][]byte{}
		}
		t.blobs[k] = slices.Clone(value)
		t.puts[k] = []byte{refMark} // the reference is made at commit
		return nil
	}
	delete(t.blobs, k)
	t.puts[k] = slices.Clone(value)
	if t.puts[k] == nil {
		t.puts[k] = []byte{}
	}
	return nil
}

func (t *etcdTx) Delete(bucket, key []byte) error {
	if !t.write {
		return fmt.Errorf("write in a read transaction")
	}
	k := t.s.key(bucket, key)
	t.touch(k)
	delete(t.blobs, k)
	t.puts[k] = nil
	return nil
}

func (t *etcdTx) touch(k string) {
	if t.puts == nil {
		t.puts = map[string][]byte{}
	}
	if _, ok := t.puts[k]; !ok {
		t.order = append(t.order, k)
	}
}

func (t *etcdTx) ForEach(bucket, from []byte, fn func(k, v []byte) error) error {
	bp := t.s.bucketPrefix(bucket)
	start := bp
	if len(from) > 0 {
		start = t.s.key(bucket, from)
	}
	end := clientv3.GetPrefixRangeEnd(bp)
	var overlay []string // written keys of this bucket ≥ start, sorted
	if t.write {
		for k := range t.puts {
			if strings.HasPrefix(k, bp) && k >= start {
				overlay = append(overlay, k)
			}
		}
		sort.Strings(overlay)
	}
	emit := func(full string, v []byte) error {
		_, key, _ := t.s.splitKey([]byte(full))
		return fn(key, v)
	}
	// Merge the committed keys with the overlay, in key order.
	flushBelow := func(limit string, inclusive bool) error {
		for len(overlay) > 0 && (overlay[0] < limit || inclusive && overlay[0] == limit || limit == "") {
			k := overlay[0]
			overlay = overlay[1:]
			if v := t.puts[k]; v != nil {
				if b, ok := t.blobs[k]; ok {
					v = b
				}
				if err := emit(k, v); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for {
		resp, err := t.s.cli.Get(t.ctx, start, t.readOpts(clientv3.WithRange(end), clientv3.WithLimit(pageSize),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))...)
		if err != nil {
			return t.s.wrap(err)
		}
		t.pin(resp.Header.Revision)
		for _, kv := range resp.Kvs {
			k := string(kv.Key)
			if err := flushBelow(k, false); err != nil {
				return err
			}
			if _, mine := t.puts[k]; mine && t.write {
				if err := flushBelow(k, true); err != nil {
					return err
				}
				continue
			}
			v, err := t.s.resolve(t.ctx, string(bucket), kv.Value, t.rev)
			if err != nil {
				return fmt.Errorf("%s: %v", strings.TrimPrefix(k, t.s.pre), err)
			}
			if err := emit(k, v); err != nil {
				return err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		start = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	return flushBelow("", true)
}

func (t *etcdTx) Absent(bucket, key []byte) error {
	if !t.write {
		return fmt.Errorf("write in a read transaction")
	}
	t.absent = append(t.absent, t.s.key(bucket, key))
	return nil
}

func (t *etcdTx) Term() int64 {
	if t.write && t.s.lead != nil {
		return t.s.lead.Rev
	}
	return 0
}

func (t *etcdTx) Sequence(bucket []byte) (uint64, error) {
	b := string(bucket)
	if n, ok := t.seqs[b]; ok {
		return n, nil
	}
	if t.write && !t.create {
		if n, ok := t.s.seqs[b]; ok {
			return n, nil
		}
	}
	resp, err := t.s.cli.Get(t.ctx, t.s.seqKey(b), t.readOpts()...)
	if err != nil {
		return 0, t.s.wrap(err)
	}
	t.pin(resp.Header.Revision)
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	data, err := unframeRecord(resp.Kvs[0].Value, false)
	if err != nil || len(data) != 8 {
		return 0, fmt.Errorf("sequence of bucket %s: %v", b, errOr(err, fmt.Errorf("%d bytes, want 8", len(data))))
	}
	n := binary.BigEndian.Uint64(data)
	if t.write && !t.create && t.s.seqs != nil {
		t.s.seqs[b] = n
	}
	return n, nil
}

func errOr(err, other error) error {
	if err != nil {
		return err
	}
	return other
}

func (t *etcdTx) SetSequence(bucket []byte, n uint64) error {
	if !t.write {
		return fmt.Errorf("write in a read transaction")
	}
	if t.seqs == nil {
		t.seqs = map[string]uint64{}
	}
	t.seqs[string(bucket)] = n
	return nil
}

func (t *etcdTx) NextSequence(bucket []byte) (uint64, error) {
	if !t.write {
		return 0, fmt.Errorf("write in a read transaction")
	}
	n, err := t.Sequence(bucket)
	if err != nil {
		return 0, err
	}
	if t.seqs == nil {
		t.seqs = map[string]uint64{}
	}
	t.seqs[string(bucket)] = n + 1
	return n + 1, nil
}

// view runs fn in a read transaction pinned to one revision and returns
// that revision.
func (s *Etcd) view(ctx context.Context, fn func(kvTx) error) (int64, error) {
	t := &etcdTx{s: s, ctx: ctx}
	err := fn(t)
	if t.rev == 0 && err == nil {
		// fn read nothing: the revision is the current one.
		resp, gerr := s.cli.Get(ctx, s.commitKey(), clientv3.WithCountOnly())
		if gerr != nil {
			return 0, s.wrap(gerr)
		}
		t.rev = resp.Header.Revision
	}
	return t.rev, err
}

// commitMarker is the value of the commit marker: who committed last.
type commitMarker struct {
	Term int64  `json:"term"`
	N    uint64 `json:"n"`
}

// update runs fn in a write transaction and commits its writes in one
// etcd transaction conditioned on the leadership (the candidate key's
// create revision is still the term) and on the commit marker being the
// one this leader wrote last: any write of another instance, or any
// write after the lease was lost, makes it fail with ErrNotLeader and
// change nothing. It returns the revision of the commit.
//
// An answer lost on the way (a member killed, a timeout) leaves the
// outcome unknown: the marker tells whether this commit landed, and a
// commit that did not is sent again while the leadership holds. When the
// cluster cannot be asked within commitTimeout the error wraps
// ErrUnavailable and the outcome stays unknown: the caller must give up
// leadership and reload its state from the store.
func (s *Etcd) update(ctx context.Context, fn func(kvTx) error) (int64, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.lead == nil || !s.lead.Valid() {
		return 0, fmt.Errorf("%w: this instance does not hold the leadership of %s", ErrNotLeader, s.cfg.URL())
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	t := &etcdTx{s: s, ctx: ctx, write: true}
	if err := fn(t); err != nil {
		return 0, err
	}
	if len(t.puts) == 0 && len(t.seqs) == 0 {
		return s.last, nil
	}
	// The commit runs to its end whatever the caller does meanwhile: an
	// abandoned commit would leave its outcome unknown.
	cctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	return s.commit(cctx, t)
}

// create runs fn in a write transaction that initialises the prefix: it
// commits only if the prefix holds no store yet (its meta magic key is
// absent). created is false when another instance was first.
func (s *Etcd) create(ctx context.Context, fn func(kvTx) error) (created bool, err error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	t := &etcdTx{s: s, ctx: ctx, write: true, create: true}
	if err := fn(t); err != nil {
		return false, err
	}
	ops, err := s.ops(ctx, t, "")
	if err != nil {
		return false, err
	}
	resp, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(s.pre+"meta/magic"), "=", 0)).Then(ops...).Commit()
	if err != nil {
		return false, s.wrap(err)
	}
	return resp.Succeeded, nil
}

// fence is the condition every write of the leader carries.
func (s *Etcd) fence() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(s.lead.Key), "=", s.lead.Rev)
}

func (s *Etcd) commit(ctx context.Context, t *etcdTx) (int64, error) {
	s.n++
	marker, _ := json.Marshal(commitMarker{Term: s.lead.Rev, N: s.n})
	sets, err := s.writeChunks(ctx, t)
	defer func() {
		s.stMu.Lock()
		for _, set := range sets {
			delete(s.staged, set)
		}
		s.stMu.Unlock()
	}()
	if err != nil {
		return 0, err
	}
	ops, err := s.ops(ctx, t, string(marker))
	if err != nil {
		s.dropChunks(sets)
		return 0, err
	}
	cmp := []clientv3.Cmp{s.fence(), clientv3.Compare(clientv3.ModRevision(s.commitKey()), "=", s.last)}
	var orElse []clientv3.Op
	for _, k := range t.absent {
		cmp = append(cmp, clientv3.Compare(clientv3.CreateRevision(k), "=", 0))
		orElse = append(orElse, clientv3.OpGet(k, clientv3.WithCountOnly()))
	}
	for attempt := 0; ; attempt++ {
		resp, err := s.cli.Txn(ctx).If(cmp...).Then(ops...).Else(orElse...).Commit()
		if err == nil && resp.Succeeded {
			s.committed(t, resp.Header.Revision)
			return resp.Header.Revision, nil
		}
		if err == nil {
			for i, r := range resp.Responses {
				if rr := r.GetResponseRange(); rr != nil && rr.Count > 0 {
					// A key required absent is there: a refusal, not a
					// lost leadership.
					s.dropChunks(sets)
					return 0, fmt.Errorf("%w: %s", ErrExists, strings.TrimPrefix(t.absent[i], s.pre))
				}
			}
			// A condition failed: the leadership or the marker moved.
			s.lost()
			s.dropChunks(sets)
			return 0, fmt.Errorf("%w: another instance holds the leadership of %s now; nothing was written", ErrNotLeader, s.cfg.URL())
		}
		if !unavailable(err) {
			s.dropChunks(sets)
			return 0, s.wrap(err)
		}
		// The answer was lost: did the commit land?
		rev, landed, rerr := s.resolveCommit(ctx, string(marker))
		switch {
		case rerr != nil:
			s.lost()
			return 0, fmt.Errorf("%w (whether the last change was stored is unknown until the store is read again)", rerr)
		case landed:
			s.committed(t, rev)
			return rev, nil
		case rev != s.last:
			s.lost()
			return 0, fmt.Errorf("%w: another instance wrote to %s; nothing was written", ErrNotLeader, s.cfg.URL())
		case !s.lead.Valid():
			s.lost()
			return 0, fmt.Errorf("%w: the leadership lease ran out while etcd did not answer; nothing was written", ErrNotLeader)
		}
		time.Sleep(min(time.Duration(attempt+1)*100*time.Millisecond, time.Second))
	}
}

// resolveCommit reads the commit marker until it answers: landed if it
// is marker; otherwise its mod revision (the caller's own last commit
// when this one did not land).
func (s *Etcd) resolveCommit(ctx context.Context, marker string) (rev int64, landed bool, err error) {
	for {
		resp, err := s.cli.Get(ctx, s.commitKey())
		if err == nil {
			if len(resp.Kvs) == 0 {
				return 0, false, nil
			}
			kv := resp.Kvs[0]
			return kv.ModRevision, string(kv.Value) == marker, nil
		}
		if ctx.Err() != nil || !unavailable(err) {
			return 0, false, s.wrap(err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// committed updates the leader's view after a commit at rev.
func (s *Etcd) committed(t *etcdTx, rev int64) {
	s.last = rev
	for b, n := range t.seqs {
		s.seqs[b] = n
	}
}

// lost forgets the leadership after a refused or unknown commit.
func (s *Etcd) lost() {
	if s.lead != nil {
		s.lead.lose()
	}
	s.lead = nil
}

// writeChunks writes the values too large to go inline as chunk sets,
// one fenced transaction per chunk, and makes the references the
// transaction's keys will hold. It returns the sets written.
func (s *Etcd) writeChunks(ctx context.Context, t *etcdTx) ([]string, error) {
	var sets []string
	for _, k := range t.order {
		v, ok := t.blobs[k]
		if !ok {
			continue
		}
		s.sets++
		set := fmt.Sprintf("%x-%x", s.lead.Rev, s.sets)
		s.stMu.Lock()
		s.staged[set] = true
		s.stMu.Unlock()
		sets = append(sets, set)
		n := 0
		for off := 0; off < len(v) || off == 0; off += chunkSize {
			piece := v[off:min(off+chunkSize, len(v))]
			resp, err := s.cli.Txn(ctx).If(s.fence()).Then(clientv3.OpPut(fmt.Sprintf("%s%06d", s.chunkPrefix(set), n), string(piece))).Commit()
			if err == nil && !resp.Succeeded {
				s.lost()
				return sets, fmt.Errorf("%w: the leadership of %s was lost while a table was written; nothing was committed", ErrNotLeader, s.cfg.URL())
			}
			if err != nil {
				// Chunks are only pieces: a lost answer is harmless, the
				// set is written again under a new name.
				return sets, s.wrap(err)
			}
			n++
			if off+chunkSize >= len(v) {
				break
			}
		}
		ref, _ := json.Marshal(chunkRef{Set: set, Chunks: n, Bytes: len(v), CRC: crc32.Checksum(v, castagnoli)})
		t.puts[k] = append([]byte{refMark}, ref...)
	}
	return sets, nil
}

// dropChunks deletes chunk sets whose transaction failed (best effort:
// Sweep deletes what is left).
func (s *Etcd) dropChunks(sets []string) {
	if len(sets) == 0 || s.lead == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var ops []clientv3.Op
	for _, set := range sets {
		ops = append(ops, clientv3.OpDelete(s.chunkPrefix(set), clientv3.WithPrefix()))
	}
	s.cli.Txn(ctx).If(s.fence()).Then(ops...).Commit()
}

// ops turns a write transaction into etcd operations: its puts and
// deletes, its sequences, the commit marker (if any), and the deletion
// of chunk sets its writes replace (when the limits leave room; Sweep
// deletes them otherwise). It checks the cluster's limits.
func (s *Etcd) ops(ctx context.Context, t *etcdTx, marker string) ([]clientv3.Op, error) {
	var ops []clientv3.Op
	size := 0
	for _, k := range t.order {
		v := t.puts[k]
		if v == nil {
			ops = append(ops, clientv3.OpDelete(k))
			size += len(k) + 16
			continue
		}
		ops = append(ops, clientv3.OpPut(k, string(v)))
		size += len(k) + len(v) + 16
	}
	seqs := make([]string, 0, len(t.seqs))
	for b := range t.seqs {
		seqs = append(seqs, b)
	}
	sort.Strings(seqs)
	for _, b := range seqs {
		v := frameRecord(u64(t.seqs[b]))
		ops = append(ops, clientv3.OpPut(s.seqKey(b), string(v)))
		size += len(v) + 64
	}
	if marker != "" {
		ops = append(ops, clientv3.OpPut(s.commitKey(), marker))
		size += len(marker) + 64
	}
	if len(ops) > s.cfg.MaxTxnOps || size > s.cfg.MaxRequestBytes-4096 {
		return nil, fmt.Errorf("%w: %d etcd operations and %d bytes, more than the cluster's limits of %d operations and %d bytes per transaction (etcd's --max-txn-ops and --max-request-bytes; give larger ones in the store address, e.g. %s?max-txn-ops=1024)",
			ErrTooLarge, len(ops), size, s.cfg.MaxTxnOps, s.cfg.MaxRequestBytes, s.cfg.URL())
	}
	if !t.create {
		// Chunk sets replaced by this transaction's writes.
		for _, k := range t.order {
			if len(ops) >= s.cfg.MaxTxnOps {
				break
			}
			if bucket, _, ok := s.splitKey([]byte(k)); !ok || !blobBuckets[bucket] {
				continue
			}
			resp, err := s.cli.Get(ctx, k)
			if err != nil || len(resp.Kvs) == 0 {
				continue
			}
			if ref, _ := parseRef(resp.Kvs[0].Value); ref != nil {
				ops = append(ops, clientv3.OpDelete(s.chunkPrefix(ref.Set), clientv3.WithPrefix()))
			}
		}
	}
	return ops, nil
}

// ---- leadership ----

// Lead makes l, a leadership won by Campaign, the fence of every write,
// and reads the store's commit marker and sequences as they are now.
// The caller must have caught up with the store (Follow) to at least the
// revision Lead returns before it changes anything.
func (s *Etcd) Lead(ctx context.Context, l *Leadership) (int64, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if !l.Valid() {
		return 0, fmt.Errorf("%w: the leadership lease ran out before it was taken up", ErrNotLeader)
	}
	resp, err := s.cli.Get(ctx, s.commitKey())
	if err != nil {
		return 0, s.wrap(err)
	}
	s.last = 0
	if len(resp.Kvs) > 0 {
		s.last = resp.Kvs[0].ModRevision
	}
	s.lead, s.n, s.sets, s.seqs = l, 0, 0, map[string]uint64{}
	return resp.Header.Revision, nil
}

// Unlead drops the leadership (it is not given up in etcd: see
// Leadership.Resign).
func (s *Etcd) Unlead() {
	s.wmu.Lock()
	s.lead = nil
	s.wmu.Unlock()
}

// Revision returns the cluster's current revision.
func (s *Etcd) Revision(ctx context.Context) (int64, error) {
	resp, err := s.cli.Get(ctx, s.commitKey(), clientv3.WithCountOnly())
	if err != nil {
		return 0, s.wrap(err)
	}
	return resp.Header.Revision, nil
}

// Sweep deletes the chunk sets no key refers to (left by commits that
// failed, or by a leader that died between its chunks and its commit),
// except those of commits in flight. Leader only.
func (s *Etcd) Sweep(ctx context.Context) (deleted int, err error) {
	refs := map[string]bool{}
	for b := range blobBuckets {
		resp, err := s.cli.Get(ctx, s.bucketPrefix([]byte(b)), clientv3.WithPrefix())
		if err != nil {
			return 0, s.wrap(err)
		}
		for _, kv := range resp.Kvs {
			if ref, _ := parseRef(kv.Value); ref != nil {
				refs[ref.Set] = true
			}
		}
	}
	resp, err := s.cli.Get(ctx, s.pre+"chunks/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		return 0, s.wrap(err)
	}
	var garbage []string
	seen := map[string]bool{}
	s.stMu.Lock()
	for _, kv := range resp.Kvs {
		set, _, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), s.pre+"chunks/"), "/")
		if !seen[set] && !refs[set] && !s.staged[set] {
			garbage = append(garbage, set)
		}
		seen[set] = true
	}
	s.stMu.Unlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for len(garbage) > 0 {
		if s.lead == nil {
			return deleted, ErrNotLeader
		}
		n := min(len(garbage), s.cfg.MaxTxnOps)
		var ops []clientv3.Op
		for _, set := range garbage[:n] {
			ops = append(ops, clientv3.OpDelete(s.chunkPrefix(set), clientv3.WithPrefix()))
		}
		r, err := s.cli.Txn(ctx).If(s.fence()).Then(ops...).Commit()
		if err != nil {
			return deleted, s.wrap(err)
		}
		if !r.Succeeded {
			s.lost()
			return deleted, ErrNotLeader
		}
		deleted += n
		garbage = garbage[n:]
	}
	return deleted, nil
}

// Compact discards the history before rev (the leader does, so that the
// cluster's space holds the current state and a little history).
func (s *Etcd) Compact(ctx context.Context, rev int64) error {
	_, err := s.cli.Compact(ctx, rev)
	if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
		return s.wrap(err)
	}
	return nil
}

// Space reports the size of the members' databases: allocated and in
// use (the largest over the members that answer).
func (s *Etcd) Space(ctx context.Context) (size, inUse int64, err error) {
	for _, ep := range s.cfg.Endpoints {
		st, err := s.cli.Status(ctx, ep)
		if err != nil {
			continue
		}
		size, inUse = max(size, st.DbSize), max(inUse, st.DbSizeInUse)
	}
	if size == 0 {
		return 0, 0, fmt.Errorf("%w: no etcd member answered a status request", ErrUnavailable)
	}
	return size, inUse, nil
}

// ---- following ----

// Event is one change of a record seen by Follow: Value nil for a
// deletion.
type Event struct {
	Bucket string
	Key    []byte
	Value  []byte
}

// ErrCompacted is returned by Follow when the history it needs was
// discarded: the follower must read the whole store again.
var ErrCompacted = errors.New("store history compacted")

// Follow calls fn with the changes of every revision after rev, in
// order, one call per revision (values of chunked keys assembled); fn
// is also called with no events to tell that the store reached a
// revision without changes of records. It returns when ctx ends, when
// fn fails, or with ErrCompacted or ErrUnavailable.
func (s *Etcd) Follow(ctx context.Context, rev int64, fn func(rev int64, evs []Event) error) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := s.cli.Watch(wctx, s.pre, clientv3.WithPrefix(), clientv3.WithRev(rev+1), clientv3.WithProgressNotify())
	for wr := range wch {
		if wr.CompactRevision != 0 {
			return fmt.Errorf("%w: revision %d is gone (compacted at %d)", ErrCompacted, rev+1, wr.CompactRevision)
		}
		if err := wr.Err(); err != nil {
			return s.wrap(err)
		}
		i := 0
		for i < len(wr.Events) {
			r := wr.Events[i].Kv.ModRevision
			var evs []Event
			for ; i < len(wr.Events) && wr.Events[i].Kv.ModRevision == r; i++ {
				e := wr.Events[i]
				bucket, key, ok := s.splitKey(e.Kv.Key)
				if !ok {
					continue
				}
				ev := Event{Bucket: bucket, Key: key}
				if e.Type == mvccpb.PUT {
					v, err := s.resolve(ctx, bucket, e.Kv.Value, r)
					if err != nil {
						if errors.Is(err, ErrUnavailable) {
							return err
						}
						if ctx.Err() == nil && isCompacted(err) {
							return fmt.Errorf("%w: %v", ErrCompacted, err)
						}
						return fmt.Errorf("%s: %v", strings.TrimPrefix(string(e.Kv.Key), s.pre), err)
					}
					ev.Value = v
					if ev.Value == nil {
						ev.Value = []byte{}
					}
				}
				evs = append(evs, ev)
			}
			if err := fn(r, evs); err != nil {
				return err
			}
			rev = r
		}
		if wr.Header.Revision > rev {
			if err := fn(wr.Header.Revision, nil); err != nil {
				return err
			}
			rev = wr.Header.Revision
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("%w: the watch of %s ended", ErrUnavailable, s.cfg.URL())
}

func isCompacted(err error) bool {
	return errors.Is(err, rpctypes.ErrCompacted) || strings.Contains(err.Error(), "required revision has been compacted")
}

func (s *Etcd) close() error { return s.Close() }
