// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymview

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// CommandName is the subcommand of otelcol-gym that serves the viewer.
const CommandName = "view"

// RunCommand is `otelcol-gym view [--capture-dir DIR] [--listen ADDR]
// [--jaeger-url URL] [--gym-output DIR] [--gym-run RUN] [--stalled-after D]
// [--max-rollouts N] [JOB_DIR]`: it serves the
// viewer until SIGINT or SIGTERM and returns the exit code. args are the
// arguments after "view".
func RunCommand(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("otelcol-gym "+CommandName, flag.ContinueOnError)
	fs.SetOutput(stderr)
	defDir := os.Getenv("NEMO_GYM_CAPTURE_DIR")
	if defDir == "" {
		defDir = "./captures"
	}
	dir := fs.String("capture-dir", defDir, "the capture dir to show ($NEMO_GYM_CAPTURE_DIR, else ./captures)")
	listen := fs.String("listen", DefaultEndpoint, "host:port to serve on (loopback unless you widen it)")
	jaeger := fs.String("jaeger-url", "", "a Jaeger UI (e.g. http://127.0.0.1:16686): rollout pages link to their trace there")
	gymOutput := fs.String("gym-output", "", "Gym's output of the run: the `DIR` of gym eval run --output DIR/rollouts.jsonl, or that file; each rollout shows its reward, failure and health verdict")
	gymRun := fs.String("gym-run", "", "the `RUN` id Gym's output belongs to (default: the run that started last)")
	stalled := fs.Duration("stalled-after", DefaultStalledAfter, "mark a rollout in flight stalled when its last sign of life is older (0: never)")
	maxRollouts := fs.Int("max-rollouts", DefaultMaxRollouts, "the rollouts the viewer keeps in memory, about 480 bytes each; past it the oldest are no longer listed (their runs count them)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: otelcol-gym %s [--capture-dir DIR] [--listen %s] [--jaeger-url URL] [--gym-output DIR] [--gym-run RUN] [--stalled-after DURATION] [--max-rollouts N] [JOB_DIR]\n\n"+
			"Serves the rollout viewer (a read-only web UI) over a capture dir, live or from a past run.\n"+
			"JOB_DIR, a gym eval submit job dir that otelcol-gym replay wrote into, shows its model-calls/ with Gym's artifacts/.\n\n", CommandName, DefaultEndpoint)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(stderr, "otelcol-gym %s: unexpected argument %q\n", CommandName, fs.Arg(1))
		fs.Usage()
		return 2
	}
	if fs.NArg() == 1 { // a job dir
		if given(fs, "capture-dir") {
			fmt.Fprintf(stderr, "otelcol-gym %s: give a job dir or --capture-dir, not both\n", CommandName)
			return 2
		}
		captureDir, output, err := jobDir(fs.Arg(0))
		if err != nil {
			fmt.Fprintf(stderr, "otelcol-gym %s: %v\n", CommandName, err)
			return 2
		}
		*dir = captureDir
		if *gymOutput == "" {
			*gymOutput = output
		}
	}
	if *gymRun != "" && *gymOutput == "" {
		fmt.Fprintf(stderr, "otelcol-gym %s: --gym-run names the run of --gym-output: give --gym-output too\n", CommandName)
		return 2
	}
	if err := ValidateJaegerURL(*jaeger); err != nil {
		fmt.Fprintf(stderr, "otelcol-gym %s: --jaeger-url: %v\n", CommandName, err)
		return 2
	}
	if *stalled < 0 {
		fmt.Fprintf(stderr, "otelcol-gym %s: --stalled-after must not be negative (0 turns it off), got %s\n", CommandName, *stalled)
		return 2
	}
	if *maxRollouts < 1 {
		fmt.Fprintf(stderr, "otelcol-gym %s: --max-rollouts must be at least 1, got %d\n", CommandName, *maxRollouts)
		return 2
	}
	log := newCommandLogger(stderr)
	defer func() { _ = log.Sync() }()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := Options{CaptureDir: *dir, JaegerURL: *jaeger, LocalOnly: IsLoopback(*listen), Logger: log,
		GymOutput: *gymOutput, GymRun: *gymRun, StalledAfter: *stalled, MaxRollouts: *maxRollouts}
	if err := serve(ctx, opts, *listen, stderr); err != nil {
		fmt.Fprintf(stderr, "otelcol-gym %s: %v\n", CommandName, err)
		return 1
	}
	return 0
}

// given reports whether the flag name was set on the command line.
func given(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func serve(ctx context.Context, opts Options, listen string, stderr io.Writer) error {
	dir := opts.CaptureDir
	if st, err := os.Stat(dir); err != nil {
		opts.Logger.Warn("The capture dir does not exist (yet); the viewer shows it once it does", zap.String("capture_dir", dir))
	} else if !st.IsDir() {
		return fmt.Errorf("--capture-dir %s is not a directory", dir)
	}
	if opts.GymOutput != "" {
		if _, err := os.Stat(opts.GymOutput); err != nil {
			opts.Logger.Warn("Gym's output does not exist (yet); the viewer shows it once it does", zap.String("gym_output", opts.GymOutput))
		}
	}
	h, err := New(opts)
	if err != nil {
		return err
	}
	defer h.Close()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	// The address actually bound (with --listen 127.0.0.1:0, the port chosen).
	fmt.Fprintf(stderr, "otelcol-gym %s: serving %s on http://%s/\n", CommandName, dir, ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// IsLoopback reports whether a host:port listens on loopback only
// (127.0.0.0/8, ::1 or localhost).
func IsLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func newCommandLogger(w io.Writer) *zap.Logger {
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeLevel = zapcore.CapitalLevelEncoder
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), zapcore.Lock(zapcore.AddSync(w)), zapcore.InfoLevel)
	return zap.New(core)
}
