// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"

// Job spans (design §4.3): a span whose name is a job span name is in no
// rollout. With the split on it is held settle, then until nothing else of
// its trace is held (at most wait), so that it leaves after the roots cut
// from its trace, and links them (place, expire). tracePending counts the
// held spans of each trace but its job spans; jobWait lists the job spans.

func (c *Core) dropJobWait(n *Node) {
	js := c.jobWait[n.key.Trace]
	out := js[:0]
	for _, j := range js {
		if j != n {
			out = append(out, j)
		}
	}
	if len(out) == 0 {
		delete(c.jobWait, n.key.Trace)
	} else {
		c.jobWait[n.key.Trace] = out
	}
}

// traceLeft counts a non-job span of trace out of the pending store; the job
// spans of a trace leave once nothing else of it is pending.
func (c *Core) traceLeft(trace [16]byte) {
	k := c.tracePending[trace] - 1
	if k > 0 {
		c.tracePending[trace] = k
		return
	}
	delete(c.tracePending, trace)
	js := c.jobWait[trace]
	if len(js) == 0 {
		return
	}
	ready := make([]*Node, 0, len(js))
	for _, j := range js {
		if j.held != nil && j.settled {
			ready = append(ready, j)
		}
	}
	for _, j := range ready {
		if j.held != nil {
			c.emit(j)
		}
	}
}
