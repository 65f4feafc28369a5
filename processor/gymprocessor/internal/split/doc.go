// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package split is one trace per rollout (design §4.3), as pure functions
// over decided spans and the two tables they need:
//
//   - traceid.go: T', the trace id every span of a rollout gets, and the ids
//     derived like it;
//   - attempt.go: a re-dispatched attempt's name and the one before it;
//   - jobs.go:    per job trace, the rollout roots cut from it (a job span's
//     count and links);
//   - roots.go:   recent rollout roots, for a retried attempt's link;
//   - split.go:   the part the processor holds: the tables, the memos of T'
//     and of hex trace ids, what a root and a leaving span are given, and
//     its checkpoint.
//
// It decides nothing about which rollout a span is in, nor about holding
// one (the rollout core does, internal/rollout); given a span's decision it
// says what ids and links the span leaves with.
package split // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/split"
