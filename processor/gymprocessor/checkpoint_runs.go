// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

// Runs and processes, with whether and where their table holds them: a
// run or a process that has left its table can still be reached from a
// resource it was seen on.

func (s *snapshotter) writeRuns() {
	w := s.w
	inRuns := map[*runState]string{}
	s.e.runs.Range(func(k string, r *runState) bool { inRuns[r] = k; return true })
	w.U(uint64(len(s.runList)))
	for _, r := range s.runList {
		k, in := inRuns[r]
		w.Flag(in)
		w.Str(k)
		w.Str(r.id)
		w.I(r.firstSeen)
		w.I(int64(r.held))
		w.Flag(r.evidence)
		w.Flag(false) // unused: keeps the format
		w.Flag(r.observabilityOff)
		w.Flag(r.checked)
		w.Flag(r.passThrough)
		w.Str(r.service)
		w.Flag(r.serviceOrch)
		w.Flag(r.manyService)
	}
}

func (d *restorer) readRuns() error {
	r := d.r
	d.runs = make([]*runState, r.Count())
	for i := range d.runs {
		in, key := r.Flag(), r.Str()
		rs := &runState{id: r.Str(), firstSeen: r.I(), held: int32(r.I())}
		rs.evidence, _, rs.observabilityOff, rs.checked, rs.passThrough = r.Flag(), r.Flag(), r.Flag(), r.Flag(), r.Flag()
		rs.service, rs.serviceOrch, rs.manyService = r.Str(), r.Flag(), r.Flag()
		d.runs[i] = rs
		if in {
			d.runTable = append(d.runTable, tableEntry[*runState]{key, rs})
		}
	}
	return nil
}

// writeProcs writes the processes; their origins follow the origins
// (writeOrigins).
func (s *snapshotter) writeProcs() {
	w := s.w
	inProcs := map[*procState]string{}
	s.e.procs.Range(func(k string, p *procState) bool { inProcs[p] = k; return true })
	w.U(uint64(len(s.procList)))
	for _, p := range s.procList {
		k, in := inProcs[p]
		w.Flag(in)
		w.Str(k)
		w.Flag(false) // unused (two flags): keeps the format
		w.Flag(false)
		w.I(int64(p.held))
		w.Str(p.orgScope)
	}
}

func (d *restorer) readProcs() error {
	r := d.r
	d.procs = make([]*procState, r.Count())
	for i := range d.procs {
		in, key := r.Flag(), r.Str()
		_, _ = r.Flag(), r.Flag() // unused
		p := &procState{held: int32(r.I()), orgScope: r.Str()}
		d.procs[i] = p
		if in {
			d.procTable = append(d.procTable, tableEntry[*procState]{key, p})
		}
	}
	return r.Err()
}
