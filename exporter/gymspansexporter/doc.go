// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package gymspansexporter writes every span into NeMo Gym's capture dir
// (design §5): one line in its rollout's <rollout_id>.spans.jsonl, one in the
// combined spans.jsonl, one line per rollout root in rollouts.jsonl, and the
// service map.
//
// Start picks one writer for the configuration (writers.go: journalWriter,
// restWriter with combined_spans rest, throughWriter with combined_file "");
// pushTraces hands every batch to it and never asks which. In one line:
//
//	pushTraces → writer.admit → claim (internal/dedup) → encode (batch.go) →
//	writer.encoded → groupCommit (commit.go) → writer.writeGroup →
//	finishBatch (retry.go)
//
// With the combined file on (the default), the combined file is the journal
// (design §5.1):
//
//	pushTraces → drop spans already written (internal/dedup) → encode each span once
//	(internal/spanjson) and group its line per file (batch.go, rollouts.go)
//	→ journalWriter.encoded: the length and CRC-32C of each combined-file
//	line → groupCommit → journalWriter: one extent record in the exporter's index
//	(internal/journal), then one append to spans.jsonl for concurrent pushes
//	(commit.go; internal/capturedir: lock, tail, rotate, write) →
//	return; the rollout files' and rollouts.jsonl's lines wait in memory
//	(internal/pending) → the flusher appends every file in one sweep per
//	flush_interval, fsyncs (internal/capturedir) and
//	records how far the files are done (flusher.go) → at the next start, what a
//	killed exporter had not written is completed from the combined file by
//	recovery over the values it needs, not the exporter's state
//	(internal/recovery; its values: recover.go)
//
// With combined_file "" (throughWriter) every file is written through
// before pushTraces returns, and the spans of files that failed are handed
// back to the caller; the retry table remembers which files hold them
// (retry.go). With combined_spans rest, restWriter (write_rest.go).
//
// Packages: internal/capturedir, the file layer (file names from
// path_template and their cache, safe opens inside the capture dir, the
// bounded cache of append handles, locked appends with the torn-tail cut,
// rotation, locks kept between appends, fsync), with its own tests;
// internal/spanjson, the line encoders (console and OTLP/JSON
// lines, the text of times, how a resource's service is shown), with their
// own tests; internal/dedup, the deduplication window (span keys, claims of
// the pushes in flight) with its own tests; internal/pending, the rollout
// files' and rollouts.jsonl's lines between the combined file and their
// own files, with its own tests; internal/journal, the journal index (its
// extent, done and key records, the span data of combined_spans rest, its
// segments, and the dead indexes a start reads back), with its own tests;
// internal/recovery, the completion of a dead exporter's files at start
// (its extents' lines read back and checked, each rollout file and
// rollouts.jsonl completed by span key, the service map, the dedup keys),
// with its own tests; internal/metadata, the generated telemetry.
//
// The other files: config.go and factory.go (the component), exporter.go
// (the glue: state, Start, Shutdown, pushTraces), attributes.go (the
// attribute keys a span's rollout, run and service are read from),
// service.go (which service a line shows), servicemap.go (the service map's
// observer), timesplit.go (time_split_ms in rollouts.jsonl, design §4.8:
// each span's facts while encoding, each root's split in encodeRoots),
// metrics.go (the exporter's own metrics), credentials.go (a batch that
// holds attributes that carry credentials written from a copy without
// them, design §6).
package gymspansexporter // import "github.com/otelcol-gym/otelcol-gym/exporter/gymspansexporter"
