// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"text/template"
	"time"
)

//go:embed configs/*.yaml
var configFS embed.FS

// ports are the loopback ports and the output directory a config template is
// rendered with.
type ports struct {
	GRPC, HTTP, Metrics, Pprof, SinkGRPC int
	Out                                  string
}

// renderConfig fills configs/<name>.yaml and writes it to path.
func renderConfig(name string, p ports, path string) error {
	raw, err := configFS.ReadFile("configs/" + name + ".yaml")
	if err != nil {
		return fmt.Errorf("reading config template %s: %w", name, err)
	}
	t, err := template.New(name).Option("missingkey=error").Parse(string(raw))
	if err != nil {
		return fmt.Errorf("parsing config template %s: %w", name, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, p); err != nil {
		return fmt.Errorf("rendering config template %s: %w", name, err)
	}
	return os.WriteFile(path, b.Bytes(), 0o640)
}

// freePorts returns n distinct free TCP ports on 127.0.0.1. The listeners are
// held until all n are chosen, so the ports differ from each other.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	out := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}

// collector is one running otelcol-gym process.
type collector struct {
	cmd     *exec.Cmd
	pid     int
	metrics string // http://127.0.0.1:<port>/metrics
	log     *os.File
	done    chan struct{}
	waitErr error
}

// startCollector runs bin --config cfg, logging to logPath, and waits until
// its internal metrics endpoint answers and every listed port accepts a
// connection.
func startCollector(ctx context.Context, bin, cfg, logPath string, metricsPort int, listen ...int) (*collector, error) {
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the collector log: %w", err)
	}
	cmd := exec.Command(bin, "--config", cfg) //nolint:gosec // the harness runs the binary it was told to
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(gomaxprocs))
	if err := cmd.Start(); err != nil {
		_ = lf.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	c := &collector{cmd: cmd, pid: cmd.Process.Pid, log: lf, done: make(chan struct{}),
		metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)}
	go func() {
		c.waitErr = cmd.Wait()
		close(c.done)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ready := true
		if _, err := scrape(ctx, c.metrics); err != nil {
			ready = false
		}
		for _, p := range listen {
			if !ready {
				break
			}
			conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p), time.Second)
			if err != nil {
				ready = false
				break
			}
			_ = conn.Close()
		}
		if ready {
			return c, nil
		}
		select {
		case <-c.done:
			_ = lf.Close()
			return nil, fmt.Errorf("collector exited during start-up (%v); log %s:\n%s", c.waitErr, logPath, tail(logPath, 20))
		case <-ctx.Done():
			c.kill()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond): // polling a starting process
		}
		if time.Now().After(deadline) {
			c.kill()
			return nil, fmt.Errorf("collector not ready after 60s; log %s:\n%s", logPath, tail(logPath, 20))
		}
	}
}

// stop sends SIGTERM and waits for the process to exit (SIGKILL after 60s).
func (c *collector) stop() error {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(60 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
		_ = c.log.Close()
		return errors.New("collector did not exit within 60s of SIGTERM; killed")
	}
	_ = c.log.Close()
	var ee *exec.ExitError
	if c.waitErr != nil && !errors.As(c.waitErr, &ee) {
		return c.waitErr
	}
	if c.waitErr != nil {
		return fmt.Errorf("collector exited with %v", c.waitErr)
	}
	return nil
}

func (c *collector) kill() {
	_ = c.cmd.Process.Kill()
	<-c.done
	_ = c.log.Close()
}

// procStat is a process's CPU time and peak resident set.
type procStat struct {
	CPU     time.Duration // utime + stime
	PeakRSS int64         // VmHWM, bytes
}

// clkTck is sysconf(_SC_CLK_TCK); it is 100 on every Linux the Go runtime
// supports (the kernel's USER_HZ is fixed at 100 for user space).
const clkTck = 100

// readProc reads /proc/<pid>/stat (utime, stime) and /proc/<pid>/status (VmHWM).
func readProc(pid int) (procStat, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	cpu, err := parseStatCPU(string(raw))
	if err != nil {
		return procStat{}, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procStat{}, err
	}
	return procStat{CPU: cpu, PeakRSS: parseStatusKB(string(status), "VmHWM:") * 1024}, nil
}

// parseStatCPU returns utime+stime from a /proc/<pid>/stat line. The command
// name (field 2) is in parentheses and may hold spaces, so fields are counted
// from the last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc/<pid>/stat")
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, errors.New("short /proc/<pid>/stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("parsing /proc/<pid>/stat: %w", err)
	}
	return time.Duration(ut+st) * time.Second / clkTck, nil
}

// parseStatusKB returns the value in kB of a /proc/<pid>/status key, or 0.
func parseStatusKB(status, key string) int64 {
	for _, line := range strings.Split(status, "\n") {
		if strings.HasPrefix(line, key) {
			f := strings.Fields(line[len(key):])
			if len(f) > 0 {
				v, _ := strconv.ParseInt(f[0], 10, 64)
				return v
			}
		}
	}
	return 0
}

// scrape reads a Prometheus text endpoint and sums each metric over its
// label sets. Names lose a trailing "_total" so either exposition matches.
func scrape(ctx context.Context, url string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseMetrics(resp.Body)
}

// saveMetrics keeps the collector's internal metrics at the end of a run
// (best effort) for a look at the components' own counters.
func saveMetrics(ctx context.Context, url, path string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err == nil {
		_ = os.WriteFile(path, raw, 0o640)
	}
}

func parseMetrics(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		end := strings.IndexAny(line, "{ ")
		if end < 0 {
			continue
		}
		name := strings.TrimSuffix(line[:end], "_total")
		rest := line[end:]
		if rest[0] == '{' {
			j := strings.LastIndexByte(rest, '}')
			if j < 0 {
				continue
			}
			rest = rest[j+1:]
		}
		// "<value>" or "<value> <timestamp>".
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		out[name] += v
	}
	return out, sc.Err()
}

// Internal metric names (without _total) the harness reads.
const (
	mAccepted   = "otelcol_receiver_accepted_spans"
	mRefused    = "otelcol_receiver_refused_spans"
	mSent       = "otelcol_exporter_sent_spans"
	mSendFailed = "otelcol_exporter_send_failed_spans"
)

// tail returns the last n lines of a file, for error messages.
func tail(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
