package multiring

// Cable is the cable a duplex multiring needs when every ring is laid along
// ring ±1 (seed §2, §3): the duplex ring ±s winds s times around, so it
// costs s lengths of ring ±1. {±1,±2,±3,±7} costs 13, i.e. 3.25 times the
// 4 lengths of Gemini's four ±1 rings, as the seed says.
func Cable(duplexSteps []int) int {
	sum := 0
	for _, s := range duplexSteps {
		sum += abs(s)
	}
	return sum
}

// CableSeed is the seed's formula for the cable of the growable multiring
// with n simplex rings: E(n) = 4 + Σ_{i=1}^{n/2-1} 2(2i-1), which is
// exactly n²/2 - 2n + 6.
func CableSeed(n int) int {
	e := 4
	for i := 1; i <= n/2-1; i++ {
		e += 2 * (2*i - 1)
	}
	return e
}

// CableSeedApprox is the seed's approximation E(n) ≈ n²/2 - 4n.
func CableSeedApprox(n int) float64 { return float64(n)*float64(n)/2 - 4*float64(n) }
