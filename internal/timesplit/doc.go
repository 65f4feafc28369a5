// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package timesplit says where a finished rollout's time went (design §4.8):
// its duration split along the critical path of its trace into model, tools,
// verify, agent, queue and other, summing exactly to the duration.
//
//	span → Facts (facts.go: ids, times and Role, role.go) → Tracker.Add (a
//	rollout's facts, bounded, tracker.go) → Tracker.Finish(root) → Of (the
//	critical-path walk, split.go) → Split (category.go: nanoseconds per
//	category, the milliseconds of rollouts.jsonl)
//
// A span is classified once, when it arrives, from itself and its process
// (role.go: the one place that says what a model call, a tool call, a verify
// call and the agent's /run are); the walk then needs only each span's
// facts, 40 bytes, never the span. The gymspans exporter (time_split_ms in
// rollouts.jsonl) and the gymgenai connector (the per-run histograms) each
// keep a Tracker of their own.
package timesplit // import "github.com/otelcol-gym/otelcol-gym/internal/timesplit"
