package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/icn-hpc/icn/fm/store"
	"github.com/spf13/cobra"
)

// newServeStoreCmd is the "icn serve store" group: moving a fabric
// manager's state between stores.
func newServeStoreCmd() *cobra.Command {
	c := &cobra.Command{Use: "store", Short: "Move a fabric manager's state between a bbolt file and an etcd store"}
	c.AddCommand(newServeStoreCopyCmd())
	return c
}

// serveStoreCopyOptions are the flags of icn serve store copy.
type serveStoreCopyOptions struct {
	from, to                  string
	etcdCA, etcdCert, etcdKey string
}

func newServeStoreCopyCmd() *cobra.Command {
	var o serveStoreCopyOptions
	c := &cobra.Command{
		Use:   "copy",
		Short: "Copy every record of a store into a new one (bbolt file ↔ etcd prefix), then check the copy",
		Long: `Copies the fabric, the jobs and their tables, the multicast groups, the audit log, the
answers to request ids and the meta records (the token's hash among them) from one store into
a new, empty one, then checks the copy as a start would. The source is read in one snapshot;
no instance may serve it while it is copied (stop the service, or every instance of an etcd
store, first: what is written after the snapshot is not copied). The destination must be new:
a bbolt file that does not exist yet, or an etcd prefix that holds nothing. The instances of
the new store use the source's token: give them its token file.`,
		Example: `  icn serve store copy --from bolt:/var/lib/icn/fm.db --to etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379/icn
  icn serve store copy --from etcd://127.0.0.1:2379/icn --to bolt:fm-copy.db`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runServeStoreCopy(c.Context(), o, stdout(c))
		},
	}
	f := c.Flags()
	f.StringVar(&o.from, "from", "", "the store to copy: bolt:FILE or etcd://HOST:PORT[,HOST:PORT…]/PREFIX")
	f.StringVar(&o.to, "to", "", "the new store: bolt:FILE (must not exist) or etcd://…/PREFIX (must hold nothing)")
	f.StringVar(&o.etcdCA, "etcd-cacert", "", "PEM file of the CA that signs the etcd members' certificates (TLS)")
	f.StringVar(&o.etcdCert, "etcd-cert", "", "client certificate (PEM) for etcd")
	f.StringVar(&o.etcdKey, "etcd-key", "", "the client certificate's key (PEM)")
	c.MarkFlagRequired("from")
	c.MarkFlagRequired("to")
	return c
}

func runServeStoreCopy(ctx context.Context, o serveStoreCopyOptions, w io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	if o.from == o.to {
		return &exitError{code: 2, err: fmt.Errorf("--from and --to are the same store")}
	}
	from, err := openStoreArg(ctx, o, o.from, false)
	if err != nil {
		return err
	}
	defer from.Close()
	to, err := openStoreArg(ctx, o, o.to, true)
	if err != nil {
		return err
	}
	start := time.Now()
	n, err := store.Copy(ctx, from, to)
	to.Close()
	if err != nil {
		if strings.HasPrefix(o.to, "bolt:") {
			os.Remove(strings.TrimPrefix(o.to, "bolt:"))
		}
		return storeExit(err, false)
	}
	fmt.Fprintf(w, "copied %d records from %s to %s in %.1f s; the copy passes the check\n", n, from.Name(), to.Name(), time.Since(start).Seconds())
	return nil
}

// openStoreArg opens a store named by --from or --to: an existing one
// to read, or (fresh) a new one to write.
func openStoreArg(ctx context.Context, o serveStoreCopyOptions, arg string, fresh bool) (*store.Store, error) {
	flag := map[bool]string{false: "--from", true: "--to"}[fresh]
	if path, ok := strings.CutPrefix(arg, "bolt:"); ok {
		if path == "" {
			return nil, &exitError{code: 2, err: fmt.Errorf("%s bolt: names no file", flag)}
		}
		if !fresh {
			st, err := store.OpenBoltReadOnly(path)
			return st, storeExit(err, false)
		}
		if _, err := os.Stat(path); err == nil {
			return nil, &exitError{code: 2, err: fmt.Errorf("%s %s: the file exists; a copy goes into a new file (remove it first)", flag, path)}
		}
		st, _, err := store.OpenBolt(path)
		return st, storeExit(err, false)
	}
	if !strings.HasPrefix(arg, "etcd://") {
		return nil, &exitError{code: 2, err: fmt.Errorf("%s %q: want bolt:FILE or etcd://HOST:PORT[,HOST:PORT…]/PREFIX", flag, arg)}
	}
	cfg, err := parseEtcdStore(arg, o.etcdCA, o.etcdCert, o.etcdKey)
	if err != nil {
		return nil, err
	}
	st, empty, err := store.OpenEtcdStore(ctx, cfg)
	if err != nil {
		return nil, storeExit(err, false)
	}
	switch {
	case fresh && !empty:
		st.Close()
		return nil, &exitError{code: 2, err: fmt.Errorf("%s %s already holds a store; a copy goes into an empty prefix", flag, cfg.URL())}
	case !fresh && empty:
		st.Close()
		return nil, &exitError{code: 2, err: fmt.Errorf("%s %s holds no store", flag, cfg.URL())}
	}
	return st, nil
}
