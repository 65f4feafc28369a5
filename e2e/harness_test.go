// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/otelcol-gym/otelcol-gym/internal/testbin"
)

// repoRoot is the module root.
func repoRoot(testing.TB) string { return testbin.RepoRoot() }

// binary returns the path of cmd/<name>: the one named by envVar when set,
// else one built once for the whole test process.
func binary(t testing.TB, name, envVar string) string {
	t.Helper()
	p, err := testbin.Path(name, envVar)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func collectorBinary(t testing.TB) string { return binary(t, "otelcol-gym", "OTELCOL_GYM_BIN") }

func gymsimBinary(t testing.TB) string { return binary(t, "gymsim", "GYMSIM_BIN") }

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	pickedPorts.mu.Lock()
	defer pickedPorts.mu.Unlock()
	if len(pickedPorts.given) > listenPorts/2 {
		clear(pickedPorts.given) // ports of collectors long stopped
	}
	for range 1000 {
		port := listenPortsFrom + rand.IntN(listenPorts)
		if pickedPorts.given[port] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // in use
		}
		_ = l.Close()
		pickedPorts.given[port] = true
		return port
	}
	t.Fatal("no free loopback port below the ephemeral range")
	return 0
}

// The ports a collector under test listens on are picked below Linux's
// default ephemeral range (32768–60999), not by listening on port 0: a port
// the kernel handed out once can be handed out again, to any process's next
// outgoing connection, between the test's pick and the collector's bind
// (an agent dials its gateways before its receiver binds). Below the range
// only explicit binds take a port, and this process never picks one twice
// while it remembers it.
const (
	listenPortsFrom = 20000
	listenPorts     = 12000 // up to 31999
)

var pickedPorts = struct {
	mu    sync.Mutex
	given map[int]bool
}{given: map[int]bool{}}

// ports are the loopback listeners of one collector under test.
type ports struct {
	GRPC, HTTP, Health, Metrics, View int
}

func newPorts(t testing.TB) ports {
	return ports{GRPC: freePort(t), HTTP: freePort(t), Health: freePort(t), Metrics: freePort(t), View: freePort(t)}
}

// expand replaces ${GRPC}, ${HTTP}, ${HEALTH}, ${METRICS}, ${VIEW} and
// ${CAPTURE_DIR} in a config template.
func (p ports) expand(tmpl, captureDir string) string {
	return strings.NewReplacer(
		"${GRPC}", fmt.Sprint(p.GRPC),
		"${HTTP}", fmt.Sprint(p.HTTP),
		"${HEALTH}", fmt.Sprint(p.Health),
		"${METRICS}", fmt.Sprint(p.Metrics),
		"${VIEW}", fmt.Sprint(p.View),
		"${CAPTURE_DIR}", captureDir,
	).Replace(tmpl)
}

// collector is one otelcol-gym subprocess.
type collector struct {
	t      testing.TB
	cmd    *exec.Cmd
	ports  ports
	stderr *lockedBuffer
	done   chan struct{}
	err    error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startCollector runs the binary with args and extra environment, and waits
// until its health check answers on p.Health (when the config has one) or
// until it exits. It is stopped with SIGTERM when the test ends.
func startCollector(t testing.TB, p ports, env []string, args ...string) *collector {
	t.Helper()
	return startCollectorAs(t, p, nil, env, args...)
}

// startCollectorAs is startCollector with the process's user and group
// (nil: this test's).
func startCollectorAs(t testing.TB, p ports, cred *syscall.Credential, env []string, args ...string) *collector {
	t.Helper()
	cmd := exec.Command(collectorBinary(t), args...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	cmd.Env = append(os.Environ(), env...)
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "OTELCOL_GYM_STORAGE_DIR=") }) {
		// gateway.yaml's journal defaults to ./otelcol-gym-state, which
		// would be the package's directory, shared by every run.
		cmd.Env = append(cmd.Env, "OTELCOL_GYM_STORAGE_DIR="+t.TempDir())
	}
	c := &collector{t: t, cmd: cmd, ports: p, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout = c.stderr
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.err = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			_ = cmd.Process.Kill()
			<-c.done
		}
		if t.Failed() {
			t.Logf("collector output:\n%s", c.stderr.String())
		}
	})
	c.waitHealthy()
	return c
}

// waitHealthy polls the health endpoint; it gives up when the process exits
// or after a generous bound.
func (c *collector) waitHealthy() {
	c.t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d/", c.ports.Health)
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-c.done:
			c.t.Fatalf("collector exited before it was healthy: %v\n%s", c.err, c.stderr.String())
		case <-tick.C:
		}
	}
	c.t.Fatalf("collector not healthy on %s\n%s", url, c.stderr.String())
}

// stop sends SIGTERM and waits for the exit; it returns the exit error.
func (c *collector) stop() error {
	c.t.Helper()
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(60 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
		return errors.New("collector did not exit within 60s of SIGTERM")
	}
	return c.err
}

// kill sends SIGKILL and waits for the exit.
func (c *collector) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
}

// runCmd runs a binary to completion with a deadline and returns its output.
func runCmd(t testing.TB, timeout time.Duration, env []string, bin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// writeFile writes content to dir/name and returns the path.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
