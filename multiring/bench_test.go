package multiring

import "testing"

func benchBalanced(b *testing.B, n int, steps string) {
	m, err := Parse(n, steps)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s := m.Balanced()
		_ = s.Effective()
	}
}

// BenchmarkBalanced128x12: capacity and balanced schedule, N=128, 12 rings.
func BenchmarkBalanced128x12(b *testing.B)  { benchBalanced(b, 128, "±1,±2,±3,±5,±7,±9") }
func BenchmarkBalanced128x12b(b *testing.B) { benchBalanced(b, 128, "±1,±12,±15,±17,±33,±47") }
func BenchmarkBalanced16x4(b *testing.B)    { benchBalanced(b, 16, "±1,±3") }
