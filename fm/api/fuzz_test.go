package api

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/icn-hpc/icn/fm/client"
)

// FuzzDecodeJobRequest: the strict request decoder never panics, and what
// it accepts has only known keys, each once, and round-trips.
func FuzzDecodeJobRequest(f *testing.F) {
	for _, s := range []string{`{"nodes":1}`, `{"NODES":1}`, `{"nodes":1,"nodes":2}`, `{"nodes":1,"transit":2,"algo":"improved","name":"x"}`,
		`[]`, `{}`, `{"nodes":1}{}`, `{"nodes":"1"}`, ``, `{"a":{"b":[1,2,{"c":3}]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, _ := http.NewRequest("POST", "/", bytes.NewReader(data))
		var req client.JobRequest
		if err := decode(r, &req); err != nil {
			return
		}
		if err := checkKeys(data, &req); err != nil {
			t.Fatalf("accepted %q but its keys fail: %v", data, err)
		}
	})
}
