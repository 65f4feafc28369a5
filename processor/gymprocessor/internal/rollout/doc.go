// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package rollout is the gym processor's rollout core (design §4.2, and the
// cuts of §4.3): it decides which rollout each span belongs to, and holds
// the spans that must wait, by what they still need. It knows spans by the
// facts the processor reads from them (Facts) and never touches their data:
// a held span's data stays with its Owner, in the slot the core names.
//
//	Arrive(facts) -> admit (index) -> Owner.Arrived -> place -> decide -> [Owner.Decided] -> leave -> Owner.Left
//	                                                        \-> hold (pending store, deadline) -> Flush -> expire -> ...
//
// Gym's common case, a span whose rollout is known as it arrives (its own
// evidence, or a parent already decided), is the fast path: its index entry
// (and a placeholder for a parent not yet arrived), the events, and nothing
// else: no pending entry, no wait state (waitState, the bookkeeping of a
// span that something waits on or below).
//
// The rules, one file each, each with its own tests:
//
//	arrive.go     a span in: its run, the index, duplicates and resent copies, placed
//	decide.go     a span decided (direct, downward, upward), or released in none
//	downward.go   children that wait for their parent's decision
//	upward.go     the rollouts found below a span, and the upward decision
//	root.go       whether an upward span is its rollout's root, and cut from its parent
//	job.go        job spans, held until their trace's roots are cut
//	leak.go       a request that took a finished request's context, detached
//	runs.go       what a run has shown: observability off, the setup diagnostics
//	deadlines.go  how long each kind of wait lasts, one function a rule
//	pending.go    the pending store: held spans by deadline, bounds, the parts' one way of holding
//	flush.go      the timer: every decision whose deadline came, in phase and attempt order
//	leave.go      a span leaving, told to the owner
//	index.go      the index of spans (hashed keys), and its expiry
//	checkpoint.go the core's state, written and restored exactly
//
// The parts (the split, the service-map repair) hear what the core decides
// through its Owner, may hold a decided span through Hold, and keep their
// notes about a span in its node (Node.Note); no file outside this package
// reads or writes the core's state.
package rollout // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/rollout"
