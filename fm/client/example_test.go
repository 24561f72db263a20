package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/icn-hpc/icn/fm/client"
)

// A client of two instances: the standby redirects the placement to the
// leader, which the client follows with its token.
func Example() {
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req client.JobRequest
		json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("X-ICN-Role", "leader")
		w.WriteHeader(201)
		json.NewEncoder(w).Encode(client.JobRecord{ID: 1, Nodes: req.Nodes, State: client.JobRunning})
	}))
	defer leader.Close()
	standby := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-ICN-Leader", leader.URL)
		w.Header().Set("Location", leader.URL+r.URL.RequestURI())
		w.WriteHeader(307)
	}))
	defer standby.Close()
	c := client.New(standby.URL+","+leader.URL, "token")
	var j client.JobRecord
	err := c.Do(context.Background(), "POST", "/api/jobs", client.JobRequest{Nodes: 8, RequestID: "r1"}, &j, true)
	fmt.Println(j.ID, j.Nodes, j.State, err, c.Leader() == leader.URL)
	// Output: 1 8 running <nil> true
}
