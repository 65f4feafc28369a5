// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package gymprocessor implements the gym trace processor (SPEC §4): every
// span learns the NeMo Gym rollout it belongs to, and every rollout becomes
// its own bounded trace.
//
// Files, one idea each:
//   - evidence.go: direct evidence (§4.1) and what is known per process and run.
//   - index.go:    the span index (keyed by a seeded hash); placeholders for parents not yet arrived.
//   - prepare.go:  what a batch says on its own, read before the lock.
//   - engine.go:   the state machine: direct, downward, upward (§4.2), cuts (§4.3).
//   - edit.go:     a leaving span's rewrite, decided under the lock, written after it.
//   - split.go:    T', the job and root tables, previous attempts (§4.3).
//   - pending.go:  held spans, their deadlines and size estimate (§4.5).
//   - servicemap.go: service-map repair (§4.4): peer.service, synthesized CLIENT parents.
//   - promote.go:  promote_to_resource regrouping.
//   - metrics.go, diagnostics.go: telemetry and rate-limited setup warnings (§4.5).
//
// Service-map repair (§4.4) is hooked where engine.emit plans the rewrite of
// a span that leaves (leave, repairOnEmit), where engine.arrive indexes a span (noteArrival) and
// where decide would emit a parentless SERVER span (holdForRolloutParent).
package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"
