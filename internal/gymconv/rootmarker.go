// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymconv // import "github.com/otelcol-gym/otelcol-gym/internal/gymconv"

// ProcessorType is the component type of the gym processor (its
// metadata.yaml's type).
const ProcessorType = "gym"

// RootMarker is what the gym processor's factory tells the components of
// its collector: the gym processor decides each rollout's root and marks it
// with RolloutRootAttribute, and the gymspans exporter then writes
// rollouts.jsonl from the marked spans instead of guessing the roots
// (rollout_roots: auto). The exporter finds the factory through the host it
// is given at start (hostcapabilities.ComponentFactory, ProcessorType).
type RootMarker interface {
	// MarksRolloutRoots reports whether the factory created a gym processor.
	// The collector builds its factories anew for each configuration it
	// runs, and creates every component before it starts any, so at an
	// exporter's start this says whether the configuration has one.
	MarksRolloutRoots() bool
}
