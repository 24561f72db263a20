package alloc

// chooseAlone makes chooseByTables' choice without building a table when
// the tied candidates form one translation class: their tables are
// isomorphic, so diameter and π_max tie and the first candidate in
// enumeration order wins. It reports false (nothing chosen) when there
// are several classes.
func (d *decision) chooseAlone(tied []*candidate, res *Result) bool {
	first := tied[0]
	for _, c := range tied {
		if c.iso == "" || c.iso != first.iso {
			return len(tied) == 1 && d.pickAlone(first, res)
		}
	}
	for _, c := range tied {
		if c.order < first.order {
			first = c
		}
	}
	return d.pickAlone(first, res)
}

func (d *decision) pickAlone(c *candidate, res *Result) bool {
	res.Chosen, res.Tables = &c.Candidate, 0
	d.materialize(c)
	return true
}
