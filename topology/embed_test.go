package topology

import "testing"

func TestGrayEmbedding(t *testing.T) {
	for _, tc := range []struct{ guest, host string }{
		{"ring:8", "hypercube:3"}, {"ring:16", "hypercube:4"}, {"mesh:4x8", "hypercube:5"},
		{"torus:4x4", "hypercube:4"}, {"torus:8x4x4", "hypercube:7"}, {"line:32", "hypercube:5"},
	} {
		g, _ := Parse(tc.guest)
		h, _ := Parse(tc.host)
		e, err := GrayEmbedding(g, h)
		if err != nil {
			t.Fatal(err)
		}
		st, err := e.Measure()
		if err != nil {
			t.Fatal(err)
		}
		if st.Congestion != 1 || st.Dilation != 1 || st.Expansion != 1 || st.Load != 1 {
			t.Errorf("%s in %s: %+v, want congestion = dilation = expansion = 1", tc.guest, tc.host, st)
		}
		// The naive binary order stretches some ring/torus links.
		id, _ := IdentityEmbedding(g, h)
		ist, _ := id.Measure()
		if g.Shape().Family != "mesh" && ist.Dilation < 2 {
			t.Errorf("%s: identity dilation %d, expected > 1", tc.guest, ist.Dilation)
		}
	}
	g, _ := Parse("ring:6")
	h, _ := Parse("hypercube:3")
	if _, err := GrayEmbedding(g, h); err == nil {
		t.Error("ring:6 accepted")
	}
}
