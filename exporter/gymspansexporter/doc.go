// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package gymspansexporter writes every span into NeMo Gym's capture dir
// (SPEC §5): one line in its rollout's <rollout_id>.spans.jsonl, one in the
// combined spans.jsonl, one line per rollout root in rollouts.jsonl, and the
// service map.
//
//	pushTraces → encode each span once (console.go | otlpjson.go) and group its line per file
//	(batch.go, rollouts.go) → groupCommit: one append per file for concurrent pushes (commit.go)
//	→ fileStore.appendLines (files.go: flock, torn tail, writev; lockhold.go) → count, and hand
//	the spans of failed files back to the caller (retry.go) → observers (servicemap.go)
//
// Nothing is queued: when pushTraces returns nil every line of its batch is
// in the kernel; a flusher fsyncs at most every flush_interval. The other
// files: config.go and factory.go (the component), exporter.go (the glue:
// state, Start, Shutdown, pushTraces), attributes.go (the attribute keys a
// span's rollout, run and service are read from), service.go (the service a
// line shows), layout.go (file names from path_template), bounded.go (the
// bounded tables), json.go and times.go (what both encoders share),
// metrics.go (the exporter's own metrics).
package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"
