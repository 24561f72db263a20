package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/icn-hpc/icn/fm"
	"github.com/icn-hpc/icn/fm/api"
)

// A fabric manager served over HTTP: /healthz says the instance's role.
func Example() {
	dir, _ := os.MkdirTemp("", "icn-api-example")
	defer os.RemoveAll(dir)
	s, _, err := fm.Open(fm.Config{DBPath: filepath.Join(dir, "fm.db"), Topo: "torus:4x4", NewRouting: fm.AngaraRouting("angara*")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	srv := httptest.NewServer(api.New(s, api.Options{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("X-ICN-Role"))
	// Output: 200 leader
}
