// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package gymprocessor implements the gym trace processor (design §4): every
// span learns the NeMo Gym rollout it belongs to, every rollout becomes its
// own bounded trace, and every cross-process hop a CLIENT→SERVER edge.
//
// Data flow:
//
//	ConsumeTraces -> prepare (facts) -> [lock] core.Arrive per span -> events -> split, repair -> edits [unlock] -> apply, assemble -> next
//	timer tick    -> [lock] core.Flush (deadlines) -> events -> split, repair -> edits [unlock] -> apply, assemble -> next
//	next refuses  -> keep: held for redelivery (with storage, in the journal's held range);
//	                 each tick hands it on again, at backoff (redeliver.go)
//
// The processor is a thin shell over parts that own their state, each an
// internal package with its own tests:
//
//	internal/rollout   the rollout core (§4.2, §4.3's cuts): the index of spans, the rules, the
//	                   pending store and its deadlines; spans in as facts, decisions out as events.
//	                   It knows nothing of pdata.
//	internal/split     one trace per rollout (§4.3): T', links, the job and root tables
//	internal/repair    service-map repair (§4.4): subscribes to the core's events, holds spans
//	                   only through the core (Core.Hold), plans peer.service and synthesized parents
//	internal/evidence  what a span says of its rollout by itself (§4.1)
//	internal/state     the checkpoint's encoding, which every part writes its state in
//
// A batch, stage by stage (files of this package unless named):
//
//	prepare       what the batch says on its own, before the lock      prepare.go
//	consume       each span, from the end, through the core            engine.go -> internal/rollout/arrive.go
//	decide        direct, downward, or held for its upward decision    internal/rollout/{arrive,decide}.go
//	events        what leaves gets the split's ids and links and the   events.go -> internal/split, internal/repair
//	              repair's peer.service or parent, planned as edits
//	deliver       edits written, held spans assembled, handed on       processor.go, edit.go, round.go
//
// Gym's common case, a span whose rollout is known as it arrives (its own
// evidence, or a parent already decided), takes the fast path: an index
// entry and the parent's, no pending entry, no wait state (the core's
// bookkeeping for spans that wait), and its edit written after the lock.
//
// Files, one idea each:
//   - processor.go: the component: ConsumeTraces, the timer, Shutdown, delivery to the next consumer.
//   - credentials.go: attributes that carry credentials removed as a batch arrives, before the journal (§6).
//   - prepare.go:   what a batch says on its own (the core's and the repair's facts), read before the lock.
//   - engine.go:    the state behind the lock: the core, the parts, the held spans; a batch, a tick.
//   - events.go:    the core's events handed to the parts, and the rewrite of a leaving span planned.
//   - held.go:      the data of held spans (by the core's slot), their origins, the processes' origins.
//   - resent.go:    an unchanged resent copy of a held span, taken with it.
//   - edit.go:      a leaving span's rewrite, planned under the lock, written after it.
//   - round.go:     what one call or tick emits, assembled after the lock.
//   - names.go:     the attribute names the processor writes.
//   - promote.go:   promote_to_resource regrouping.
//   - chunk.go:     large releases handed on in bounded batches.
//   - spansize.go:  the size estimate of a held span (max_pending_bytes).
//   - metrics.go:   recording the metrics metadata.yaml declares (documentation.md lists them).
//   - diagnostics.go: rate-limited setup warnings (§4.5).
//   - redeliver.go: what the next consumer refuses, kept and handed on again (§4.5).
//   - crash.go:     with a storage extension, recording, recovery and checkpoints (§4.6).
//   - redeliver_log.go: what the user reads about redelivery (one line per interval).
//   - journal.go, journal_held.go: the journal in the storage: records, marks, checkpoints, the held range.
//   - checkpoint.go: the engine's whole state: the parts' checkpoints in order, the held spans'.
package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"
