package multicast_test

import (
	"fmt"

	"github.com/icn-hpc/icn/multicast"
	"github.com/icn-hpc/icn/topology"
)

// Route 64 random groups of 8 to 64 members on a 3-level fat
// tree with FULB-MC and with MINHOP-MC; every tree is verified and FULB
// spreads the trees over more top switches, so its busiest link carries fewer groups.
func Example() {
	g, err := topology.Parse("fattree:k=8,n=3")
	if err != nil {
		panic(err)
	}
	h, err := topology.MinHops(g, 0)
	if err != nil {
		panic(err)
	}
	w, err := multicast.ParseWorkload("random:count=64,size=8-64")
	if err != nil {
		panic(err)
	}
	groups, err := w.Groups(g, 1)
	if err != nil {
		panic(err)
	}
	for _, name := range []string{"minhop", "fulb"} {
		a, err := multicast.ParseAlgo(name)
		if err != nil {
			panic(err)
		}
		res, err := multicast.Run(h, a, groups, multicast.Options{}, nil)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %d groups verified=%v max EFI %d\n", res.Algo, res.Groups, res.Verified, res.Max)
	}
	// Output:
	// minhop: 64 groups verified=true max EFI 63
	// fulb: 64 groups verified=true max EFI 11
}
