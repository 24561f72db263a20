package etcdtest

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestClusterServesClient checks that the client library icn uses works
// with the etcd server the tests run: transactions with compares, leases
// with keep-alives, watches, and a member killed and restarted.
func TestClusterServesClient(t *testing.T) {
	c := Start(t, 3)
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	wch := cli.Watch(ctx, "k/", clientv3.WithPrefix())
	put, err := cli.Put(ctx, "k/a", "1")
	if err != nil {
		t.Fatal(err)
	}
	txn, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision("k/a"), "=", put.Header.Revision)).
		Then(clientv3.OpPut("k/b", "2")).Commit()
	if err != nil || !txn.Succeeded {
		t.Fatalf("txn: %v, succeeded %v", err, txn != nil && txn.Succeeded)
	}
	txn, err = cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision("k/a"), "=", put.Header.Revision-1)).
		Then(clientv3.OpPut("k/c", "3")).Commit()
	if err != nil || txn.Succeeded {
		t.Fatalf("a failing compare committed: %v", err)
	}
	got := 0
	for got < 2 {
		wr := <-wch
		if err := wr.Err(); err != nil {
			t.Fatal(err)
		}
		got += len(wr.Events)
	}
	lease, err := cli.Grant(ctx, 30) // outlives the member killed and restarted below
	if err != nil {
		t.Fatal(err)
	}
	ka, err := cli.KeepAlive(ctx, lease.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, "k/leased", "x", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	<-ka
	c.Members[0].Kill()
	// A write in flight while the killed member led the cluster times
	// out; the next one goes through once the others elect a leader.
	for try := 0; ; try++ {
		_, err := cli.Put(ctx, "k/d", "4")
		if err == nil {
			break
		}
		if try == 20 {
			t.Fatalf("put with one member of three down: %v", err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	c.Members[0].Restart()
	c.WaitHealthy(20 * time.Second)
	r, err := cli.Get(ctx, "k/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kvs) != 4 {
		t.Fatalf("%d keys under k/, want 4 (a, b, d, leased)", len(r.Kvs))
	}
}
