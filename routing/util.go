package routing

import "math/bits"

func bitsTrailing(x uint64) int { return bits.TrailingZeros64(x) }
