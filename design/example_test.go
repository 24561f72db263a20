package design_test

import (
	"fmt"

	"github.com/icn-hpc/icn/design"
)

// The symmetric block design B(13, 4, 1) — the projective plane of order 3,
// a distributed full switch of 13 nodes and 13 four-port switches in which
// every pair of nodes shares exactly one switch.
func Example() {
	d, err := design.Construct(13, 4, 1, design.Options{})
	if err != nil {
		panic(err)
	}
	v := d.Verify()
	fmt.Println(d.N, "blocks of", d.M, "verified:", v.OK)
	// Output: 13 blocks of 4 verified: true
}
