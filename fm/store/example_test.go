package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/icn-hpc/icn/fm/store"
)

// A store is opened (here a new bbolt file), changed in one transaction
// with its audit entry, read back and checked.
func Example() {
	dir, _ := os.MkdirTemp("", "icn-store-example")
	defer os.RemoveAll(dir)
	st, created, err := store.OpenBolt(filepath.Join(dir, "fm.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	ctx := context.Background()
	st.Update(ctx, "example", func(tx *store.Tx) error {
		if err := tx.PutFabric(store.FabricRecord{Spec: "torus:4x4", FailedLinks: []string{"0.0+X"}}); err != nil {
			return err
		}
		return tx.Log("link.fail", "0.0+X", nil)
	})
	st.View(ctx, func(tx *store.Tx) error {
		f, _, _ := tx.Fabric()
		ev, _ := tx.Events(0, 10)
		fmt.Println(created, f.Spec, f.FailedLinks, len(ev), ev[0].Action)
		return nil
	})
	fmt.Println(st.Check(ctx))
	// Output:
	// true torus:4x4 [0.0+X] 1 link.fail
	// <nil>
}
