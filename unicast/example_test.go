package unicast_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/icn-hpc/icn/topology"
	"github.com/icn-hpc/icn/unicast"
)

// Compute the linear forwarding tables of a small fat tree with the ftree
// engine, write them in OpenSM's opensm-lfts.dump format and audit them.
func Example() {
	g, err := topology.Parse("fattree:k=4,n=2")
	if err != nil {
		panic(err)
	}
	f, err := unicast.NewFabric(g, nil)
	if err != nil {
		panic(err)
	}
	res, err := unicast.Route(context.Background(), f, unicast.Options{Engine: "ftree"})
	if err != nil {
		panic(err)
	}
	var dump bytes.Buffer
	if err := res.Tables.WriteDump(&dump); err != nil {
		panic(err)
	}
	rep, err := unicast.Audit(res.Tables, unicast.AuditOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println("dump has a table per switch:", strings.Count(dump.String(), "Unicast lids") == rep.Switches)
	fmt.Println("reachable:", rep.Reachable, "deadlock-free:", rep.DeadlockFree)
	// Output:
	// dump has a table per switch: true
	// reachable: true deadlock-free: true
}
