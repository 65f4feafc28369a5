// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package repair is the service-map repair of design §4.4: it makes every
// cross-process hop a CLIENT span with a SERVER child, so that Tempo, the
// servicegraph connector, Honeycomb and gymspans draw the same edges.
//
// It is a part of the gym processor that subscribes to the rollout core's
// events (internal/rollout) and holds spans only through the core's one way
// of holding (rollout.Core.Hold):
//
//	Arrived  a SERVER span names its parent's peer and teaches its host:port
//	         (peers.go); an INTERNAL span notes its process's resource, a
//	         possible embedder parent (notes.go)
//	Decided  a parentless SERVER span with evidence is held for its
//	         rollout's gym.rollout (synthesize.go); a CLIENT span whose
//	         host:port nobody taught yet, for its peer (peers.go)
//	Left     what a leaving span gets: peer.service, or a synthesized CLIENT
//	         parent (Plan); a leaving gym.rollout lets the SERVER spans of
//	         its rollout go
//
// It reads spans as facts (Span) and returns what to write as values
// (Plan); the processor applies them to the spans.
package repair // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/repair"
