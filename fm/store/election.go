package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Leadership is one instance's candidacy for the leadership of a store:
// a key under PREFIX/election/ attached to a lease the instance keeps
// alive. The candidate whose key was created first leads; the others
// wait for the keys before theirs to go (their leases expire when their
// instances die or freeze, or they resign).
//
// The lease is also kept on this side: Valid turns false once the last
// keep-alive answer is older than the lease less a margin, so a leader
// that was frozen or cut off stops writing before etcd can have elected
// another one, whatever its goroutines do first when it wakes up. Writes
// are fenced anyway (Etcd.update).
type Leadership struct {
	s     *Etcd
	Key   string
	Rev   int64 // the key's create revision: the term
	Lease clientv3.LeaseID
	ttl   time.Duration

	mu       sync.Mutex
	deadline time.Time // monotonic: last keep-alive answer + ttl − margin
	done     chan struct{}
	once     sync.Once
	cancel   context.CancelFunc
}

// leaseMargin is how long before the lease's end as etcd counts it the
// instance stops trusting it (the time a keep-alive answer travels).
func leaseMargin(ttl time.Duration) time.Duration { return max(ttl/6, 250*time.Millisecond) }

// Campaign enters the election with value (what Leader shows others)
// and a lease of ttl (whole seconds, at least 1), and returns once this
// instance leads: every candidate before it is gone. It returns an
// error when ctx ends or the lease is lost while waiting (the candidacy
// is then withdrawn).
func (s *Etcd) Campaign(ctx context.Context, value []byte, ttl time.Duration) (*Leadership, error) {
	secs := int64(ttl / time.Second)
	if secs < 1 || ttl%time.Second != 0 {
		return nil, fmt.Errorf("lease %v: give whole seconds, at least 1s", ttl)
	}
	lctx, cancel := context.WithCancel(context.Background())
	l := &Leadership{s: s, ttl: ttl, done: make(chan struct{}), cancel: cancel}
	sent := time.Now()
	g, err := s.cli.Grant(ctx, secs)
	if err != nil {
		cancel()
		return nil, s.wrap(err)
	}
	l.Lease = g.ID
	l.deadline = sent.Add(time.Duration(g.TTL)*time.Second - leaseMargin(ttl))
	ka, err := s.cli.KeepAlive(lctx, g.ID)
	if err != nil {
		cancel()
		return nil, s.wrap(err)
	}
	go l.keep(ka)
	l.Key = fmt.Sprintf("%selection/%016x", s.pre, int64(g.ID))
	resp, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(l.Key), "=", 0)).
		Then(clientv3.OpPut(l.Key, string(value), clientv3.WithLease(g.ID))).
		Else(clientv3.OpGet(l.Key)).Commit()
	if err != nil {
		l.Resign(context.Background())
		return nil, s.wrap(err)
	}
	l.Rev = resp.Header.Revision
	if !resp.Succeeded {
		l.Rev = resp.Responses[0].GetResponseRange().Kvs[0].CreateRevision
	}
	if err := l.waitPredecessors(ctx); err != nil {
		rctx, rcancel := context.WithTimeout(context.Background(), 2*time.Second)
		l.Resign(rctx)
		rcancel()
		return nil, err
	}
	return l, nil
}

// keep follows the keep-alive answers; the lease is lost when they end.
func (l *Leadership) keep(ka <-chan *clientv3.LeaseKeepAliveResponse) {
	for r := range ka {
		if r.TTL <= 0 {
			break
		}
		d := time.Now().Add(time.Duration(r.TTL)*time.Second - leaseMargin(l.ttl))
		l.mu.Lock()
		if d.After(l.deadline) {
			l.deadline = d
		}
		l.mu.Unlock()
	}
	l.lose()
}

// waitPredecessors waits until no candidate key created before ours is
// left.
func (l *Leadership) waitPredecessors(ctx context.Context) error {
	cli := l.s.cli
	prefix := l.s.pre + "election/"
	for {
		resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithMaxCreateRev(l.Rev-1),
			clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(1))
		if err != nil {
			return l.s.wrap(err)
		}
		if len(resp.Kvs) == 0 {
			select {
			case <-l.done:
				return fmt.Errorf("%w: the lease ran out while waiting for the leadership", ErrNotLeader)
			default:
			}
			return nil
		}
		if err := l.waitDelete(ctx, string(resp.Kvs[0].Key), resp.Header.Revision); err != nil {
			return err
		}
	}
}

// waitDelete waits until key is deleted after rev.
func (l *Leadership) waitDelete(ctx context.Context, key string, rev int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := l.s.cli.Watch(wctx, key, clientv3.WithRev(rev+1))
	for {
		select {
		case <-l.done:
			return fmt.Errorf("%w: the lease ran out while waiting for the leadership", ErrNotLeader)
		case <-ctx.Done():
			return ctx.Err()
		case wr, ok := <-wch:
			if !ok {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("%w: the watch of the leader's key ended", ErrUnavailable)
			}
			if err := wr.Err(); err != nil {
				return l.s.wrap(err)
			}
			for _, e := range wr.Events {
				if e.Type == mvccpb.DELETE {
					return nil
				}
			}
		}
	}
}

// Valid reports whether the leadership still holds as far as this
// instance can tell: its lease is alive and was renewed recently enough.
func (l *Leadership) Valid() bool {
	if l == nil {
		return false
	}
	select {
	case <-l.done:
		return false
	default:
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Now().Before(l.deadline)
}

// Done is closed when the lease is lost (expired, revoked, or its
// keep-alives ended).
func (l *Leadership) Done() <-chan struct{} { return l.done }

// Term is the leadership's term: its key's create revision (larger for
// every later leader).
func (l *Leadership) Term() int64 { return l.Rev }

func (l *Leadership) lose() {
	l.once.Do(func() {
		close(l.done)
		l.cancel()
	})
}

// Resign gives the leadership (or candidacy) up: its key is deleted and
// its lease revoked, so the next candidate takes over at once.
func (l *Leadership) Resign(ctx context.Context) error {
	if l == nil {
		return nil
	}
	var err error
	if l.Key != "" && l.Rev != 0 {
		_, err = l.s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(l.Key), "=", l.Rev)).
			Then(clientv3.OpDelete(l.Key)).Commit()
	}
	if l.Lease != 0 {
		if _, rerr := l.s.cli.Revoke(ctx, l.Lease); err == nil && rerr != nil && !errors.Is(rerr, context.Canceled) {
			err = rerr
		}
	}
	l.lose()
	return l.s.wrap(err)
}

// Leader returns the value and term of the current leader's candidacy
// (ok false when there is no candidate).
func (s *Etcd) Leader(ctx context.Context) (value []byte, term int64, ok bool, err error) {
	resp, err := s.cli.Get(ctx, s.pre+"election/", clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend), clientv3.WithLimit(1))
	if err != nil {
		return nil, 0, false, s.wrap(err)
	}
	if len(resp.Kvs) == 0 {
		return nil, 0, false, nil
	}
	return resp.Kvs[0].Value, resp.Kvs[0].CreateRevision, true, nil
}
