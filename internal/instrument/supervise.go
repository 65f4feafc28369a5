// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// superviseCommand runs the command as instrument's child while the
// collector instrument started serves it, then drains the collector and
// prints the run summary. The command stays in instrument's process group,
// so a Ctrl-C (SIGINT) or Ctrl-\ (SIGQUIT) at the terminal reaches it as it
// would without instrument; instrument outlives them to drain the collector.
// SIGTERM and SIGHUP sent to instrument are passed on to the command. The
// exit is the command's: its exit code, or death by the same signal.
func superviseCommand(program string, argv, env []string, own *ownCollector, plan runPlan, stderr io.Writer) int {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(signals)

	offset, since := rolloutsSize(plan.captureDir), time.Now()
	cmd := &exec.Cmd{Path: program, Args: argv, Env: env, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	code, sig := 126, syscall.Signal(0)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "otelcol-gym %s: %s: %v\n", CommandName, argv[0], err)
	} else {
		code, sig = waitCommand(cmd, signals)
	}

	if err := own.drain(); err != nil {
		fmt.Fprintf(stderr, "otelcol-gym %s: %v\n", CommandName, err)
	}
	s, err := readRuns(plan.captureDir, offset)
	if err != nil {
		fmt.Fprintf(stderr, "otelcol-gym %s: reading %s: %v\n", CommandName, rolloutsName, err)
	}
	s.write(stderr, plan, writtenFiles(plan.captureDir, since))

	if sig != 0 {
		// Die as the command died, so that a shell sees a Ctrl-C as one.
		signal.Reset(sig)
		_ = syscall.Kill(os.Getpid(), sig)
	}
	return code
}

// waitCommand waits for the command, passing SIGTERM and SIGHUP on, and
// returns its exit code (128+n after signal n) and the signal it died of.
func waitCommand(cmd *exec.Cmd, signals <-chan os.Signal) (int, syscall.Signal) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-signals:
			if s == syscall.SIGTERM || s == syscall.SIGHUP {
				_ = cmd.Process.Signal(s)
			}
		case err := <-done:
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					return 128 + int(ws.Signal()), ws.Signal()
				}
				return ee.ExitCode(), 0
			}
			if err != nil {
				return 126, 0
			}
			return 0, 0
		}
	}
}
