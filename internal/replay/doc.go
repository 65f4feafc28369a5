// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package replay is `otelcol-gym replay` (design §10): it turns a past NeMo
// Gym run's spans into what a live run writes into a capture dir, through
// the same gym processor and gymspans exporter, in process. In one line:
//
//	findInputs (input.go) → readOTLPJSON | readConsole (a batch at a time)
//	→ feeder.batch: credentials dropped and counted (internal/credentials)
//	→ pipeline.consume: the clock to the batch's latest end, a tick
//	→ gym processor → gymcapture (when there are captures) → counter
//	→ gymspans exporter (into the stage)
//	→ pipeline.finish → output.commit (into the output dir) → summary
//
// Inputs are detected by content (input.go): a `gym eval submit` job dir
// (otel/traces*.jsonl; its model-calls/ is the default output, its
// artifacts/ what the viewer command shows beside), an OTLP/JSON lines file
// (upstream's file exporter), Gym's console output (console.go: prefixed
// lines, one-line and indent-4 multi-line span objects, log lines passed
// over; consolespan.go: a span object into pdata, its resource from the
// object), or a capture dir otelcol-gym wrote (its spans.jsonl, which is
// console-shaped). A file's rotated backups are read before it, oldest
// first. Memory is bounded whatever the input: lines are read through a
// bufio.Reader up to maxLineBytes (lines.go), a multi-line object likewise,
// and the processor and exporter keep their own bounds. A line that holds
// no readable span is skipped, counted and named (file:line), never fatal.
//
// Time (clock.go, pipeline.go): the processor reads its time from a
// spanClock (gymprocessor.WithTimeSource), which stands at the latest end
// time of the spans handed on so far. Before each batch the clock moves to
// the batch's latest end and the processor's timer ticks once, so settle
// and wait deadlines fire as they would have live (a live collector gets a
// span after it ended); at the end the clock moves past every deadline, and
// the processor and exporter shut down, writing everything they hold. A
// replay takes the time its reading and writing take, not the run's.
//
// Replaying twice (output.go): the exporter writes into a stage,
// <out>/.otelcol-gym-replay/, and only a replay that ended moves each file
// over its namesake in <out> with one rename; what the previous replay wrote
// and this one did not is removed; <out>/.otelcol-gym-replay.json lists the
// replay's files. So a second replay of the same input leaves the same
// files, with nothing twice, and a failed or killed replay leaves the
// previous one's. A dir holding otelcol-gym files that no replay wrote (a
// live collector's capture dir) is refused rather than replaced. (The
// exporter's own duplicate window is per process, and its journal is gone
// after a clean shutdown: it does not span two replays.)
//
// The other files: command.go (flags, the logger, RunCommand),
// progress.go (a line redrawn on a terminal, a line every ten seconds
// elsewhere), summary.go (what was read, written, skipped and dropped, and
// the viewer command), replay.go (one replay: run, the feeder).
package replay // import "github.com/otelcol-gym/otelcol-gym/internal/replay"
