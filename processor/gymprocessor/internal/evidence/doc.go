// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package evidence reads what a span says of its rollout by itself (design
// §4.1): its rollout attribute, else a "/ng-rollout/<id>/" segment of its
// first URL attribute; and whether it shows that Gym's observability is off
// (design §4.2). It reads span attributes and keeps no state: the gym
// processor asks it once per span, before its lock.
package evidence // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor/internal/evidence"
