package fm

import (
	"encoding/json"
	"testing"

	"github.com/icn-hpc/icn/fm/client"
)

// TestTableStatsJSON: a job's figures are stored under the names and
// with the numbers records have always had (π_max an integer), so a
// stored record reads back and encodes to the same bytes.
func TestTableStatsJSON(t *testing.T) {
	for _, stored := range []string{
		`{"diameter":4,"pi_max":10,"pi_perfect":8.48,"balance_factor":17.92452830188679,"deadlock_free":true}`,
		`{"diameter":0,"pi_max":0,"pi_perfect":0,"balance_factor":0,"deadlock_free":false}`,
	} {
		var st client.TableStats
		if err := json.Unmarshal([]byte(stored), &st); err != nil {
			t.Fatalf("%s: %v", stored, err)
		}
		b, err := json.Marshal(st)
		if err != nil || string(b) != stored {
			t.Errorf("%s encodes to %s (%v)", stored, b, err)
		}
	}
	st := client.TableStats{DeadlockFree: true}
	st.Diameter, st.PiMax, st.PiPerfect, st.BalanceFactor = 3, 5, 4, 25
	if b, _ := json.Marshal(st); string(b) != `{"diameter":3,"pi_max":5,"pi_perfect":4,"balance_factor":25,"deadlock_free":true}` {
		t.Errorf("figures encode to %s", b)
	}
}
