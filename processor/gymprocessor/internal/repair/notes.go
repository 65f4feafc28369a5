// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package repair // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/repair"

import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"

// What the repair notes about a span in its index entry (rollout.Node's
// note), in the cheapest form that holds it, since most spans need one:
//
//	Origin    an INTERNAL span's process resource and scope (a possible embedder parent)
//	*string   the service of a span's first SERVER child (an interned name)
//	*note     more than one of these, or the gym.rollout a held SERVER span hangs below
type note struct {
	peerService *string
	origin      Origin
	synth       *rolloutRef
}

func noteOf(n *rollout.Node) note {
	switch v := n.Note().(type) {
	case *note:
		return *v
	case *string:
		return note{peerService: v}
	case Origin:
		return note{origin: v}
	}
	return note{}
}

// setNote stores nt in n in its cheapest form.
func setNote(n *rollout.Node, nt note) {
	switch {
	case nt.synth == nil && nt.origin == nil && nt.peerService != nil:
		n.SetNote(nt.peerService)
	case nt.synth == nil && nt.peerService == nil && nt.origin != nil:
		n.SetNote(nt.origin)
	case nt == (note{}):
		n.SetNote(nil)
	default:
		p, ok := n.Note().(*note)
		if !ok {
			p = new(note) // not &nt: nt would escape on every call
		}
		*p = nt
		n.SetNote(p)
	}
}

func peerServiceOf(n *rollout.Node) string {
	if n == nil {
		return ""
	}
	if p := noteOf(n).peerService; p != nil {
		return *p
	}
	return ""
}

func setPeerService(n *rollout.Node, s *string) {
	nt := noteOf(n)
	nt.peerService = s
	setNote(n, nt)
}

func originOf(n *rollout.Node) Origin { return noteOf(n).origin }

func setOrigin(n *rollout.Node, o Origin) {
	nt := noteOf(n)
	nt.origin = o
	setNote(n, nt)
}

func synthOf(n *rollout.Node) *rolloutRef { return noteOf(n).synth }

func setSynth(n *rollout.Node, ref *rolloutRef) {
	nt := noteOf(n)
	nt.synth = ref
	setNote(n, nt)
}
