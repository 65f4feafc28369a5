// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package modelcall holds what the rollout viewer and the gymcapture
// processor share about Gym's model calls (design §4.7, §8): which spans are
// model calls, how one of Gym's capture lines is read (only the fields both
// use, strings bounded), and the rule that joins a rollout's capture lines to
// its model-call spans. One rule, one implementation: the viewer shows the
// join the pipeline makes.
package modelcall // import "github.com/otelcol-gym/otelcol-gym/internal/modelcall"
