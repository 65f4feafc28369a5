// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"

// The upward rule (design §4.2, rule 3): a span with no evidence and no
// ancestor in a rollout takes R, settle after it arrived, when every
// descendant whose rollout is known (directly or downward, the nearest
// decided ones: a span with its own rollout hides those below it) is in R.
// Undecided descendants are looked through. Spans of several rollouts below
// mean none (reason conflict).

// summary is the lattice empty < one rollout < conflict of the rollouts found
// below a span.
type summary struct {
	id       string
	conflict bool
}

func (s summary) empty() bool { return s.id == "" && !s.conflict }

// merge folds c into s and reports whether s changed.
func (s *summary) merge(c summary) bool {
	switch {
	case c.empty() || s.conflict:
		return false
	case c.conflict:
		*s = summary{conflict: true}
		return true
	case s.id == "":
		s.id = c.id
		return true
	case s.id == c.id:
		return false
	default:
		*s = summary{conflict: true}
		return true
	}
}

// propagateUp folds n's rollouts into the summaries of its ancestors, and
// takes the upward decision of a settled ancestor that now has one rollout
// below it.
func (c *Core) propagateUp(n *Node) {
	sum := n.contribution()
	if sum.empty() {
		return
	}
	var ready []*Node
	for ch, p, depth := n, n.parent, 0; p != nil && depth < maxWalk; ch, p, depth = p, p.parent, depth+1 {
		if ch.reqStart() != 0 {
			break // a request whose local parent's verdict is pending (leak.go)
		}
		// A span with a rollout hides what is below it: nothing to merge.
		if p.rollout != "" || !p.ws().below.merge(sum) || p.state == stAbsent {
			break
		}
		if p.how == HowUndecided && p.settled && p.held != nil {
			ready = append(ready, p)
		}
		sum = p.wait.below
	}
	for _, p := range ready {
		if p.how == HowUndecided && p.held != nil {
			c.settleDecision(p)
		}
	}
}

// settleDecision takes the upward decision of an undecided span whose settle
// has passed. It reports whether the span left the undecided state.
func (c *Core) settleDecision(n *Node) bool {
	switch {
	case n.job:
		return false
	case n.below().conflict:
		c.releaseNone(n, ReasonConflict)
		return true
	case n.below().id != "":
		c.decide(n, n.below().id, HowUpward)
		return true
	}
	return false
}
