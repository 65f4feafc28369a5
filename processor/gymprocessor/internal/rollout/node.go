// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package rollout // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"

// Key identifies a span by its original trace id and its span id.
type Key struct {
	Trace [16]byte
	Span  [8]byte
}

type nodeState uint8

const (
	stAbsent  nodeState = iota // placeholder: a child named it as parent; it has not arrived
	stPending                  // arrived, not left
	stEmitted                  // arrived, left
)

// How is how a span got its rollout (design §4.2).
type How uint8

const (
	HowUndecided How = iota
	HowDirect        // its own evidence
	HowDownward      // its nearest ancestor in a rollout
	HowUpward        // the one rollout below it
	HowNone          // in no rollout (a job span, several rollouts below, released as it stood)
)

// Node is one entry of the core's index: a span that arrived (not left, or
// left) or a placeholder for a parent a child named. A node that left keeps
// its ids, its rollout and its place in the tree, so late children are
// still decided downward. Its fields are the core's; the parts read what
// they need through its methods.
type Node struct {
	key     Key
	hash    uint64 // key's index hash
	parent  *Node  // the parent's node (placeholder if it has not arrived); nil if none
	held    *entry
	wait    *waitState // nil until something waits on it or below it
	rollout string     // "" when in no rollout (yet)
	note    any        // a part's note about the span (Note)
	end     int64      // the span's end, once it arrived (unix ns)
	fifoSeq uint32
	state   nodeState
	how     How
	job     bool
	settled bool // its settle deadline has passed
	waiting bool // registered in parent's waiters
	late    bool // a child left while this node was absent
	removed bool // dropped from the index
	root    bool // decided to be its rollout's root (root.go)
	named   bool // the span names a parent (it may have been detached from it, leak.go)
}

// waitState is the bookkeeping of a span that something waits on or below:
// what is below it (the upward rule), the children waiting for its decision
// (the downward rule), a request's pending verdict (leak.go). A span decided
// as it arrives, Gym's common case, never needs one: its index entry is all
// it costs.
type waitState struct {
	below    summary // rollouts of the spans below, nearest decided ones (upward.go)
	waiters  []*Node // children held while this node is undecided (downward.go)
	nWait    int32
	reqStart int64 // a request waiting for its local parent's verdict: its start (leak.go); else 0
}

// ws is n's wait state, made when first needed.
func (n *Node) ws() *waitState {
	if n.wait == nil {
		n.wait = &waitState{}
	}
	return n.wait
}

// below is the summary of the rollouts below n.
func (n *Node) below() summary {
	if n.wait == nil {
		return summary{}
	}
	return n.wait.below
}

// waiters are the children waiting for n's decision.
func (n *Node) waiters() []*Node {
	if n.wait == nil {
		return nil
	}
	return n.wait.waiters
}

// reqStart is the start of a request waiting for its local parent's
// verdict, else 0.
func (n *Node) reqStart() int64 {
	if n.wait == nil {
		return 0
	}
	return n.wait.reqStart
}

// NewNode returns a fresh node for an arriving span. The processor
// allocates it before its lock (Facts.Node): most spans arrive before any
// child names them, so most need one.
func NewNode() *Node { return new(Node) }

// Key is the span's key.
func (n *Node) Key() Key { return n.key }

// Parent is the node of the span's parent (a placeholder when the parent
// has not arrived), or nil.
func (n *Node) Parent() *Node { return n.parent }

// Arrived reports whether the span itself arrived (the node is no
// placeholder).
func (n *Node) Arrived() bool { return n.state != stAbsent }

// Rollout is the span's rollout, "" while undecided or in none.
func (n *Node) Rollout() string { return n.rollout }

// How is how the span got its rollout.
func (n *Node) How() How { return n.how }

// Held reports whether the span is held, and for what.
func (n *Node) Held() (Phase, bool) {
	if n.held == nil {
		return 0, false
	}
	return n.held.phase, true
}

// Note is what a part noted about the span (SetNote), or nil. The core
// keeps it with the span's index entry, for as long as that entry lives,
// and never reads it: it is the part's state (the service-map repair's).
func (n *Node) Note() any { return n.note }

// SetNote sets the part's note about the span.
func (n *Node) SetNote(v any) { n.note = v }

// candidate is the rollout a node has or would take upward.
func (n *Node) candidate() string {
	if n.rollout != "" {
		return n.rollout
	}
	return n.below().id
}

// contribution is what this node tells its parent about the rollouts below:
// its own rollout when it has one, else what is below it.
func (n *Node) contribution() summary {
	if n.rollout != "" {
		return summary{id: n.rollout}
	}
	return n.below()
}

// Slot is where the owner keeps the span's data while it is held, else
// Current.
func (n *Node) Slot() Slot {
	if n.held == nil {
		return Current
	}
	return n.held.slot
}
