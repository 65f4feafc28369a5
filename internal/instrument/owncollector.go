// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// The collector `otelcol-gym instrument` starts when none answers at the
// endpoint (--collector=auto, the default) or always (--collector=always):
// this same binary on the embedded default, writing to the run's capture
// dir, in a process group of its own (a Ctrl-C at the terminal reaches the
// command, not the collector), kept for the command's life and drained with
// SIGTERM when the command ends (the collector writes every span it accepted
// before it exits).
const (
	collectorAuto   = "auto"
	collectorNever  = "never"
	collectorAlways = "always"

	// collectorLogName is the started collector's log, in the capture dir.
	collectorLogName = "otelcol-gym.log"
	// defaultHTTPAddr is the embedded default's OTLP/HTTP address.
	defaultHTTPAddr = "127.0.0.1:4318"
	// readyTimeout bounds the started collector's start-up (a cold start on a
	// loaded machine takes seconds); readyPoll is how often it is asked.
	readyTimeout = 2 * time.Minute
	readyPoll    = 100 * time.Millisecond
)

// ownCollector is the collector instrument started.
type ownCollector struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{} // closed once it exited; err is then its Wait's
	err    error
}

// startableAt is the host:port the started collector's OTLP/HTTP receiver
// listens on for endpoint, or why it cannot serve it.
func startableAt(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", err
	}
	if u.Scheme != "http" {
		return "", errors.New("the collector instrument starts takes OTLP/HTTP without TLS: give an http:// endpoint")
	}
	ip := net.ParseIP(u.Hostname())
	if u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", fmt.Errorf("the collector instrument starts listens on a loopback address, not %s", u.Hostname())
	}
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "80"), nil
	}
	return u.Host, nil
}

// collectorArgs are the command line of the started collector: the embedded
// default, its OTLP/HTTP receiver on addr, the viewer told where Gym's output
// is, and the user's --collector-set flags.
func collectorArgs(addr string, plan runPlan, sets []string) []string {
	var args []string
	if addr != defaultHTTPAddr {
		args = append(args, "--set=receivers::otlp::protocols::http::endpoint="+addr)
	}
	if plan.gymOutput != "" {
		args = append(args, "--set=extensions::gymview::gym_output="+plan.gymOutput)
	}
	for _, s := range sets {
		args = append(args, "--set="+s)
	}
	return args
}

// startCollector starts the collector and returns once it answers at
// endpoint. When it exits first, the error holds what it wrote.
func startCollector(endpoint, addr string, plan runPlan, sets []string) (*ownCollector, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding otelcol-gym's own binary: %w", err)
	}
	if err := os.MkdirAll(plan.captureDir, 0o750); err != nil {
		return nil, fmt.Errorf("creating the capture dir: %w", err)
	}
	logPath := filepath.Join(plan.captureDir, collectorLogName)
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("opening the collector's log: %w", err)
	}
	defer logFile.Close()
	before, err := logFile.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, fmt.Errorf("opening the collector's log: %w", err)
	}
	cmd := exec.Command(self, collectorArgs(addr, plan, sets)...)
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "NEMO_GYM_CAPTURE_DIR=")
	}), "NEMO_GYM_CAPTURE_DIR="+plan.captureDir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", self, err)
	}
	c := &ownCollector{cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() { c.err = cmd.Wait(); close(c.exited) }()

	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	deadline := time.NewTimer(readyTimeout)
	defer deadline.Stop()
	for collectorAnswers(endpoint) != nil {
		select {
		case <-c.exited:
			return nil, fmt.Errorf("the collector exited (%v) before it answered at %s:\n%s", c.err, endpoint, logSince(logPath, before))
		case <-deadline.C:
			_ = c.drain() // it did not start: its log says why
			return nil, fmt.Errorf("the collector did not answer at %s within %s; its log (%s):\n%s", endpoint, readyTimeout, logPath, logSince(logPath, before))
		case <-tick.C:
		}
	}
	return c, nil
}

// pid is the started collector's process id.
func (c *ownCollector) pid() int { return c.cmd.Process.Pid }

// drain stops the collector with SIGTERM and waits until it exited: it
// writes every span it accepted first. The error is its exit's.
func (c *ownCollector) drain() error {
	select {
	case <-c.exited:
	default:
		if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return fmt.Errorf("stopping the collector (pid %d): %w", c.pid(), err)
		}
		<-c.exited
	}
	if c.err != nil {
		return fmt.Errorf("the collector (pid %d) ended with %v; its log: %s", c.pid(), c.err, c.log)
	}
	return nil
}

// logSince is what the log holds after offset (what the collector wrote).
func logSince(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil || offset > int64(len(b)) {
		return fmt.Sprintf("(its log %s could not be read: %v)", path, err)
	}
	return strings.TrimRight(string(b[offset:]), "\n")
}
