// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

// Runs and processes, with whether and where their table holds them: a
// run or a process that has left its table can still be reached from a
// resource it was seen on.

func (s *snapshotter) writeRuns() {
	w := &s.w
	inRuns := map[*runState]string{}
	s.e.runs.Range(func(k string, r *runState) bool { inRuns[r] = k; return true })
	w.u(uint64(len(s.runList)))
	for _, r := range s.runList {
		k, in := inRuns[r]
		w.flag(in)
		w.str(k)
		w.str(r.id)
		w.i(r.firstSeen)
		w.i(int64(r.held))
		w.flag(r.evidence)
		w.flag(false) // unused: keeps the format
		w.flag(r.observabilityOff)
		w.flag(r.checked)
		w.flag(r.passThrough)
		w.str(r.service)
		w.flag(r.serviceOrch)
		w.flag(r.manyService)
	}
}

func (d *restorer) readRuns() error {
	r := d.r
	d.runs = make([]*runState, r.count())
	for i := range d.runs {
		in, key := r.flag(), r.str()
		rs := &runState{id: r.str(), firstSeen: r.i(), held: int32(r.i())}
		rs.evidence, _, rs.observabilityOff, rs.checked, rs.passThrough = r.flag(), r.flag(), r.flag(), r.flag(), r.flag()
		rs.service, rs.serviceOrch, rs.manyService = r.str(), r.flag(), r.flag()
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
	w := &s.w
	inProcs := map[*procState]string{}
	s.e.procs.Range(func(k string, p *procState) bool { inProcs[p] = k; return true })
	w.u(uint64(len(s.procList)))
	for _, p := range s.procList {
		k, in := inProcs[p]
		w.flag(in)
		w.str(k)
		w.flag(false) // unused (two flags): keeps the format
		w.flag(false)
		w.i(int64(p.held))
		w.str(p.orgScope)
	}
}

func (d *restorer) readProcs() error {
	r := d.r
	d.procs = make([]*procState, r.count())
	for i := range d.procs {
		in, key := r.flag(), r.str()
		_, _ = r.flag(), r.flag() // unused
		p := &procState{held: int32(r.i()), orgScope: r.str()}
		d.procs[i] = p
		if in {
			d.procTable = append(d.procTable, tableEntry[*procState]{key, p})
		}
	}
	return r.err
}
