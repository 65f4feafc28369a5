// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package replay

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"golang.org/x/term"
)

// CommandName is the subcommand of otelcol-gym that replays past runs.
const CommandName = "replay"

// RunCommand is `otelcol-gym replay [--capture-dir DIR] PATH...`: it
// replays the spans of PATH (job dirs, OTLP/JSON lines files, Gym's console
// output, capture dirs) into a capture dir and returns the exit code. args
// are the arguments after "replay".
func RunCommand(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("otelcol-gym "+CommandName, flag.ContinueOnError)
	fs.SetOutput(stderr)
	captureDir := fs.String("capture-dir", "", "the `DIR` to write into (default: the job dir's model-calls/, beside Gym's captures)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: otelcol-gym %s [--capture-dir DIR] PATH...\n\n"+
			"Replays the spans of a past NeMo Gym run through the gym processor and the gymspans exporter,\n"+
			"and writes what a live run writes: each rollout's spans file, rollouts.jsonl, the service map.\n"+
			"PATH is a `gym eval submit` job dir (otel/traces*.jsonl), an OTLP/JSON lines file (its rotated\n"+
			"backups are read first), Gym's console output, or a capture dir otelcol-gym wrote.\n\n", CommandName)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(stderr, "otelcol-gym %s: give the job dir or the files to replay\n", CommandName)
		fs.Usage()
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := newLogger(stderr)
	defer func() { _ = logger.Sync() }()
	res, err := run(ctx, options{
		paths:      fs.Args(),
		captureDir: *captureDir,
		progress:   stderr,
		terminal:   isTerminal(stderr),
		now:        time.Now,
		logger:     logger,
	})
	if errors.Is(err, context.Canceled) {
		fmt.Fprintf(stderr, "otelcol-gym %s: interrupted; nothing was written (a previous replay's files are as they were)\n", CommandName)
		return 130
	}
	if err != nil {
		fmt.Fprintf(stderr, "otelcol-gym %s: %v\n", CommandName, err)
		return 1
	}
	writeSummary(stderr, res)
	return 0
}

// newLogger is the components' logger: warnings and errors, in the
// console encoding, to w.
func newLogger(w io.Writer) *zap.Logger {
	enc := zap.NewDevelopmentEncoderConfig()
	enc.TimeKey = ""
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.AddSync(w), zapcore.WarnLevel)
	return zap.New(core)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
