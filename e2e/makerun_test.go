// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otelcol-gym/otelcol-gym/internal/testpty"
)

// embeddedDefaultPorts are the fixed loopback ports of the embedded default.
var embeddedDefaultPorts = []int{4317, 4318, 13133, 8888, 13180}

// privateNetworkEnv marks a test process that runs in a network namespace of
// its own (inPrivateNetwork).
const privateNetworkEnv = "OTELCOL_GYM_E2E_PRIVATE_NETWORK"

// TestMakeRunStopsCleanly: `make run`, as the README tells a user to run it,
// on the embedded default's fixed ports, stopped each way a user or a script
// stops it. After each stop the span sent before it is in spans.jsonl and
// every port is free again; make's exit status is the collector's: 0 after a
// clean stop on Ctrl-C or on SIGTERM to the collector, non-zero when the
// collector fails. A SIGTERM to make itself stops the collector cleanly too,
// but GNU make then re-raises the signal on itself: its status is "killed by
// SIGTERM" (143 in a shell) whatever its recipe did, and no Makefile can
// change that (Makefile, `run`).
//
// It runs in a network namespace of its own (it re-executes itself under
// `unshare --net`), so the fixed ports cannot meet anything else on the
// machine.
func TestMakeRunStopsCleanly(t *testing.T) {
	if !inPrivateNetwork(t, "^TestMakeRunStopsCleanly$") {
		return
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}

	t.Run("Ctrl-C on the terminal", func(t *testing.T) {
		r := startMakeRun(t, true)
		r.sendSpan(t)
		if _, err := r.terminal.Write([]byte{3}); err != nil { // ^C, as typed
			t.Fatal(err)
		}
		r.wait(t)
		r.requireExit(t, 0)
		r.requireCleanStop(t)
	})

	t.Run("SIGTERM to the collector", func(t *testing.T) {
		r := startMakeRun(t, false)
		r.sendSpan(t)
		collector := childOf(t, r.cmd.Process.Pid) // foreground exec'd the collector in its place
		if err := syscall.Kill(collector, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		r.wait(t)
		r.requireExit(t, 0)
		r.requireCleanStop(t)
	})

	t.Run("SIGTERM to make", func(t *testing.T) {
		r := startMakeRun(t, true) // foreground between make and the collector passes it on
		r.sendSpan(t)
		if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		r.wait(t)
		r.requireCleanStop(t)
		if strings.Contains(r.output.String(), "make: ***") {
			t.Errorf("make reports its recipe failed:\n%s", r.output.String())
		}
		ws, _ := r.cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
			t.Errorf("make's status %v: GNU make re-raises SIGTERM after its recipe; if it now exits, update the Makefile's and the README's note", r.cmd.ProcessState)
		}
	})

	t.Run("a second otelcol-gym is told the first one answers", func(t *testing.T) {
		r := startMakeRun(t, false)
		first := childOf(t, r.cmd.Process.Pid) // foreground exec'd the collector in its place
		second := exec.Command(collectorBinary(t))
		second.Env = append(os.Environ(), "NEMO_GYM_CAPTURE_DIR="+t.TempDir())
		out, err := second.CombinedOutput()
		if code := second.ProcessState.ExitCode(); err == nil || code != 1 {
			t.Errorf("the second otelcol-gym exited %v (%v), want status 1", second.ProcessState, err)
		}
		for _, want := range []string{
			fmt.Sprintf("127.0.0.1:4317 (taken by otelcol-gym (pid %d))", first),
			"A collector already answers on 127.0.0.1:13133 (its health check)",
			"--set=receivers::otlp::protocols::grpc::endpoint=127.0.0.1:<another port>",
			"--set=service::telemetry::metrics::level=none",
		} {
			if !strings.Contains(string(out), want) {
				t.Errorf("the second otelcol-gym does not say %q:\n%s", want, out)
			}
		}
		if strings.Contains(string(out), "stacktrace") || strings.Contains(string(out), "goroutine ") {
			t.Errorf("the second otelcol-gym printed a stack trace:\n%s", out)
		}
		if err := syscall.Kill(first, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		r.wait(t)
		r.requireExit(t, 0)
	})

	t.Run("a collector that fails fails make", func(t *testing.T) {
		taken, err := net.Listen("tcp", "127.0.0.1:4317")
		if err != nil {
			t.Fatal(err)
		}
		defer taken.Close()
		r := newMakeRun(t, false)
		r.wait(t)
		if code := r.cmd.ProcessState.ExitCode(); code == 0 || code == -1 {
			t.Errorf("make exited %v with 127.0.0.1:4317 taken, want a failure", r.cmd.ProcessState)
		}
		// It says which address is taken, by whom, and the flag that moves
		// it, before the collector starts: no logged error, no stack trace.
		out := r.output.String()
		for _, want := range []string{"otelcol-gym: cannot start: 127.0.0.1:4317 (taken by ", " is in use.", "--set=receivers::otlp::protocols::grpc::endpoint=127.0.0.1:<another port>"} {
			if !strings.Contains(out, want) {
				t.Errorf("the output does not say %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "stacktrace") || strings.Contains(out, "goroutine ") {
			t.Errorf("the output holds a stack trace:\n%s", out)
		}
	})
}

// makeRun is one `make run` on the embedded default.
type makeRun struct {
	cmd        *exec.Cmd
	output     *lockedBuffer
	terminal   *os.File // the pseudo-terminal's master, when it runs on one
	captureDir string
	done       chan struct{}
	spanID     string
}

// newMakeRun starts `make run` without rebuilding the collector under test
// (BIN is its directory), on a pseudo-terminal of its own when onTerminal.
func newMakeRun(t *testing.T, onTerminal bool) *makeRun {
	t.Helper()
	r := &makeRun{output: &lockedBuffer{}, captureDir: filepath.Join(t.TempDir(), "captures"), done: make(chan struct{})}
	r.cmd = exec.Command("make", "--no-print-directory", "-C", repoRoot(t), "-o", "collector", "run",
		"BIN="+filepath.Dir(collectorBinary(t)))
	r.cmd.Env = append(os.Environ(), "NEMO_GYM_CAPTURE_DIR="+r.captureDir)
	r.cmd.Stdout, r.cmd.Stderr = r.output, r.output
	if onTerminal {
		master, tty, err := testpty.Open()
		if err != nil {
			t.Skipf("no pseudo-terminal here: %v", err)
		}
		defer tty.Close()
		t.Cleanup(func() { master.Close() })
		r.terminal = master
		r.cmd.Stdin, r.cmd.Stdout, r.cmd.Stderr = tty, tty, tty
		r.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
		go func() { _, _ = io.Copy(r.output, master) }()
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = r.cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			killTree(r.cmd.Process.Pid)
			<-r.done
		}
		if t.Failed() {
			t.Logf("make run:\n%s", r.output.String())
		}
	})
	return r
}

// startMakeRun starts `make run` and waits until the collector is healthy.
func startMakeRun(t *testing.T, onTerminal bool) *makeRun {
	t.Helper()
	r := newMakeRun(t, onTerminal)
	c := &collector{t: t, cmd: r.cmd, ports: ports{Health: 13133}, stderr: r.output, done: r.done}
	c.waitHealthy()
	return r
}

// sendSpan sends one span over OTLP/HTTP and waits until the collector took it.
func (r *makeRun) sendSpan(t *testing.T) {
	t.Helper()
	tp := newHTTPTracerProvider(t, 4318, "nemo-gym/makerun")
	_, span := tp.Tracer("makerun").Start(t.Context(), "make run")
	r.spanID = span.SpanContext().SpanID().String()
	span.End()
	if err := tp.Shutdown(t.Context()); err != nil {
		t.Fatalf("sending a span to make run's collector: %v", err)
	}
}

func (r *makeRun) wait(t *testing.T) {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(2 * time.Minute):
		t.Fatal("make run did not exit within 2 minutes")
	}
}

func (r *makeRun) requireExit(t *testing.T, want int) {
	t.Helper()
	if got := r.cmd.ProcessState.ExitCode(); got != want {
		t.Fatalf("make run exited %v, want exit status %d", r.cmd.ProcessState, want)
	}
}

// requireCleanStop: the span sent is written and every port is free.
func (r *makeRun) requireCleanStop(t *testing.T) {
	t.Helper()
	spans, err := os.ReadFile(filepath.Join(r.captureDir, "spans.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(spans), r.spanID) {
		t.Errorf("span %s, sent before the stop, is not in spans.jsonl", r.spanID)
	}
	for _, port := range embeddedDefaultPorts {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Errorf("port %d is still taken after make run exited: %v", port, err)
			continue
		}
		l.Close()
	}
}

// childOf returns the one child process of pid.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	children := childrenOf(pid)
	if len(children) != 1 {
		t.Fatalf("process %d has children %v, want one", pid, children)
	}
	return children[0]
}

func childrenOf(pid int) []int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var children []int
	for _, f := range strings.Fields(string(b)) {
		var child int
		if _, err := fmt.Sscan(f, &child); err == nil {
			children = append(children, child)
		}
	}
	return children
}

// killTree kills pid's descendants and pid (a test that failed to stop them).
func killTree(pid int) {
	for _, child := range childrenOf(pid) {
		killTree(child)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}

// inPrivateNetwork reports whether the test process runs in a network
// namespace of its own (then the test goes on). Otherwise it runs the tests
// that run selects in a new test process under `unshare --net` (or, without
// the right to, `unshare --user --map-root-user --net`) with loopback up,
// logs their output, fails when they failed, and returns false: the test is
// done. Where no namespace can be made the test is skipped.
func inPrivateNetwork(t *testing.T, run string) bool {
	t.Helper()
	if os.Getenv(privateNetworkEnv) == "1" {
		return true
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{exe, "-test.run", run, "-test.count", "1", "-test.v"}
	env := append(os.Environ(), privateNetworkEnv+"=1", "OTELCOL_GYM_BIN="+collectorBinary(t))
	var tried []string
	for _, unshare := range [][]string{{"--net"}, {"--user", "--map-root-user", "--net"}} {
		cmd := exec.Command("unshare", append(unshare, append([]string{"sh", "-c", `ip link set lo up && exec "$@"`, "sh"}, args...)...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		how := "unshare " + strings.Join(unshare, " ")
		if strings.Contains(string(out), "=== RUN") { // the tests ran there
			if err != nil {
				t.Fatalf("in a private network namespace (%s): %v\n%s", how, err, out)
			}
			t.Logf("in a private network namespace (%s):\n%s", how, out)
			return false
		}
		tried = append(tried, fmt.Sprintf("%s: %v: %s", how, err, out))
	}
	t.Skipf("no private network namespace here, and the embedded default's fixed ports are not to be taken outside one:\n%s", strings.Join(tried, "\n"))
	return false
}
