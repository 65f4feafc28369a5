// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package gymprocessor implements the gym trace processor (design §4): every
// span learns the NeMo Gym rollout it belongs to, and every rollout becomes
// its own bounded trace.
//
// Data flow:
//
//	ConsumeTraces -> engine.prepare -> [lock] engine.consume [unlock] -> deliver -> next
//	timer tick    -> retryRefused (what next refused, at backoff) -> next
//	              -> [lock] engine.flush (settle, cut, release, job spans by deadline) [unlock]
//	                 -> deliver -> next
//	next refuses  -> keep: held for redelivery (with storage, in the journal's held range)
//
// A batch, stage by stage (consume calls each per span, in this order):
//
//	prepare       what the batch says on its own, before the lock   prepare.go
//	observeRun    what the span shows of its run (§4.2)              runs.go
//	passThrough   out at once when its run passes through            unindexed.go
//	admit         into the span index, or out at once (duplicates)   admit.go
//	noteArrival   what it teaches the service map (§4.4)             servicemap.go
//	place         decided (and what waits on it, emitted) or held    place.go
//	deliver       rewrites applied, released spans assembled, sent   processor.go
//
// Files, one idea each:
//   - processor.go: the component: ConsumeTraces, the timer, Shutdown, delivery to the next consumer.
//   - prepare.go:   what a batch says on its own, read before the lock.
//   - engine.go:    the engine's state and its timer entry, flush (per tick).
//   - consume.go:   its batch entry, consume, and arrive: one span through its stages.
//   - admit.go:     a span into the span index (nodes, placeholders, duplicates, resent copies).
//   - place.go:     an admitted span decided or held.
//   - leak.go:      a request that took a finished request's context, detached from it (admit asks, §4.2).
//   - unindexed.go: the spans that leave at once without entering the index.
//   - evidence.go:  direct evidence (§4.1).
//   - runs.go:      what is known per sending process and per run, and what a run has shown (§4.2).
//   - decide.go:    direct, downward and upward decisions, waiters, cuts (§4.2, §4.3).
//   - pending.go:   held spans, their phases, and every deadline rule (§4.2, §4.5).
//   - emit.go:      a span leaving: out of the pending store, its rewrite planned.
//   - edit.go:      a leaving span's rewrite, decided under the lock, written after it.
//   - round.go:     what one call or tick emits, assembled after the lock.
//   - index.go:     the span index (keyed by a seeded hash); placeholders for parents not yet arrived.
//   - split.go:     T', the job and root tables, job-span links, previous attempts (§4.3).
//   - servicemap.go: service-map repair (§4.4): its hooks where spans arrive and leave.
//   - peerservice.go: peer.service on CLIENT spans, from host:port learned from SERVER spans.
//   - synthesize.go: synthesized CLIENT parents for SERVER spans whose caller sent none.
//   - promote.go:   promote_to_resource regrouping.
//   - chunk.go:     large releases handed on in bounded batches.
//   - spansize.go:  the size estimate of a held span (max_pending_bytes).
//   - hashid.go:    the ids the processor derives (T', synthesized span ids).
//   - metrics.go:   recording the metrics metadata.yaml declares (documentation.md lists them).
//   - diagnostics.go: rate-limited setup warnings (§4.5).
//   - crash.go:     with a storage extension, recording, recovery and checkpoints (§4.6).
//   - journal.go:   the journal in the storage: records, delivery marks, checkpoints, generations.
//   - redeliver.go: what the next consumer refused, kept and handed on again with backoff;
//     the pending bounds' refusal upstream (§4.5).
//   - redeliver_log.go: what the user reads about it (one line per interval).
//   - journal_held.go: the held range, where the storage keeps refused batches.
//   - checkpoint.go: the engine's whole state, encoded and restored exactly: the parts' order.
//   - checkpoint_codec.go: the checkpoint's varints, ids and string table.
//   - checkpoint_*.go: one part of the state each, its writer beside its reader.
//
// Service-map repair (§4.4) is hooked where a span leaves (emit.go: leave calls
// repairOnEmit), where a span is indexed (consume.go: arrive calls noteArrival)
// and where decide would emit a parentless SERVER span (holdForRolloutParent).
// The leaked-context rule (leak.go) is asked where a span is admitted: for
// its own parent, and for the requests that named it before it arrived.
package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"
