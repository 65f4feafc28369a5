// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package gymviewextension serves the rollout viewer inside the collector.
// Data flow:
//
//	HTTP request -> confighttp server (Start) -> gymview.Handler (internal/gymview)
//	             -> reads of the gymspans capture dir (rollouts.jsonl, <id>.spans.jsonl,
//	                Gym's <id>.capture.jsonl, service_map.json) -> HTML / JSON
//
// The extension owns only the server's lifecycle; what a page shows is
// internal/gymview's, shared with `otelcol-gym view`.
package gymviewextension // import "github.com/otelcol-gym/otelcol-gym/extension/gymviewextension"
