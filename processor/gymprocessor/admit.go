// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import "go.opentelemetry.io/collector/pdata/ptrace"

// admit enters an arriving span into the span index: its node (a
// placeholder of it filled, or a fresh one) now pending, with its parent's
// node (a placeholder when the parent has not arrived). It returns nil when
// the span does not enter: a zero span id, or a duplicate, leaves at once
// (passUnindexed); an unchanged resent copy of a held span is held with it
// (held true).
func (e *engine) admit(sp ptrace.Span, info *resInfo, sf *spanFacts) (n *node, held bool) {
	r := e.r
	pid := sp.ParentSpanID()
	if sp.Kind() == ptrace.SpanKindServer && pid.IsEmpty() {
		r.problems[problemServerWithoutParent]++
	}
	orig := sf.orig
	sid := sp.SpanID()
	if sid.IsEmpty() {
		e.passUnindexed(sp, info, sf, nil)
		return nil, false
	}
	key := spanKey{trace: orig, span: sid}
	n, taken := e.idx.get(sf.h, key)
	if n != nil && n.state != stAbsent {
		if e.holdResent(n, sp) {
			r.resent++
			return nil, true // out of the batch: it leaves with the held copy (resent.go)
		}
		r.duplicates++
		e.passUnindexed(sp, info, sf, n)
		return nil, false
	}
	if n == nil {
		n = sf.node // allocated by prepare, outside the lock
		sf.node = nil
		if n == nil {
			n = e.newNode()
		}
		n.key = key
		e.idx.put(sf.h, n, taken)
	} else if n.late {
		r.lateParents++
		n.late = false
	}
	n.state = stPending
	n.end = int64(sp.EndTimestamp())
	e.judgeWaitingRequests(n)
	if !pid.IsEmpty() && pid != sid {
		pk := spanKey{trace: orig, span: pid}
		p, taken := e.idx.get(sf.ph, pk)
		if p == nil {
			p = e.newNode()
			p.key = pk
			e.idx.put(sf.ph, p, taken)
			e.fifo.push(p, e.now)
		}
		n.parent = p
		if sf.localRequest {
			e.judgeRequestParent(n, int64(sp.StartTimestamp()))
		}
	}
	return n, false
}

// newNode returns a fresh node: one prepare allocated for a span that did
// not need it (its node was already there), else a new one.
func (e *engine) newNode() *node {
	if k := len(e.spare); k > 0 {
		n := e.spare[k-1]
		e.spare = e.spare[:k-1]
		return n
	}
	return new(node)
}

// keepSpare keeps a node prepare allocated and the span did not use. It
// was never published, so it is as fresh as a new one.
func (e *engine) keepSpare(sf *spanFacts) {
	if sf.node != nil && len(e.spare) < maxSpareNodes {
		e.spare = append(e.spare, sf.node)
	}
	sf.node = nil
}

// maxSpareNodes bounds the unused nodes kept for placeholders.
const maxSpareNodes = 256
