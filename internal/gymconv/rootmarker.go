// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymconv // import "github.com/otelcol-gym/otelcol-gym/internal/gymconv"

import "sync/atomic"

// The gym processor decides each rollout's root and marks it with
// RolloutRootAttribute; the gymspans exporter in the same collector then
// writes rollouts.jsonl from the marked spans instead of guessing the roots
// (rollout_roots: auto). This registry is how the exporter knows, at its
// start, that a gym processor was created in its process.
var rootMarkers atomic.Int64

// NoteRootMarker records that a component which marks rollout roots with
// RolloutRootAttribute (the gym processor) was created in this process. Its
// factory calls it.
func NoteRootMarker() { rootMarkers.Add(1) }

// RootMarkerCreated reports whether NoteRootMarker was called in this
// process.
func RootMarkerCreated() bool { return rootMarkers.Load() > 0 }
