// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

// The lines a server process prints on stdout for the orchestrator.
const (
	listenLine = "gymsim-listen"
	doneLine   = "gymsim-done"
)

// runServer is the main of a server process (agent, model or resources): it
// serves on a loopback port until the orchestrator closes its stdin, then
// flushes its TracerProvider and reports what it exported.
func runServer(c *config, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(stderr, "gymsim %s: listening: %v\n", c.role, err)
		return 1
	}
	p, err := newProvider(ctx, c, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "gymsim %s: %v\n", c.role, err)
		return 1
	}
	truth, err := newTruthWriter(c.truth)
	if err != nil {
		fmt.Fprintf(stderr, "gymsim %s: %v\n", c.role, err)
		return 1
	}
	m := newSpanMaker(c, p.tp, truth)
	g := &gymServer{cfg: c, m: m, client: newHTTPClient(m, c.concurrency), capture: &captureStore{dir: c.captureDir}, self: ln.Addr().String(), warm: warmUp{coldStart: c.coldStart}}
	s := &server{m: m, tp: p.tp, semconv: c.serverSemconv(c.role), routes: g.routesFor(c.role)}
	fresh := newFreshConns()
	hs := &http.Server{Handler: s.handler(), ReadHeaderTimeout: time.Minute, ConnState: fresh.track}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(stdout, "%s %s\n", listenLine, ln.Addr())

	// The orchestrator closes stdin when the run is over (or dies).
	_, _ = io.Copy(io.Discard, stdin)

	code := 0
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	fresh.closeAll()
	if err := hs.Shutdown(sctx); err != nil {
		fmt.Fprintf(stderr, "gymsim %s: stopping the HTTP server: %v\n", c.role, err)
		code = 1
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "gymsim %s: serving: %v\n", c.role, err)
		code = 1
	}
	st, err := p.shutdown(sctx)
	if err != nil {
		fmt.Fprintf(stderr, "gymsim %s: %v\n", c.role, err)
		code = 1
	}
	if err := truth.close(); err != nil {
		fmt.Fprintf(stderr, "gymsim %s: %v\n", c.role, err)
		code = 1
	}
	if !st.ok() {
		fmt.Fprintf(stderr, "gymsim %s: spans lost: %s\n", c.role, st)
		code = 1
	}
	fmt.Fprintf(stdout, "%s created=%d ended=%d exported=%d failed=%d errors=%d\n",
		doneLine, truth.created.Load(), st.ended, st.exported, st.failed, st.errors)
	return code
}

// child is a server process started by the orchestrator.
type child struct {
	role  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
	lines chan string // stdout lines after the listen line
	waitc chan error
}

// startChild re-executes this binary with the role flag and waits for the
// address it listens on.
func startChild(ctx context.Context, exe string, args []string, role string, stderr io.Writer) (*child, error) {
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("starting the %s server: %w", role, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("starting the %s server: %w", role, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the %s server: %w", role, err)
	}
	ch := &child{role: role, cmd: cmd, stdin: stdin, lines: make(chan string, 16), waitc: make(chan error, 1)}
	listen := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		first := true
		for sc.Scan() {
			line := sc.Text()
			if first && strings.HasPrefix(line, listenLine+" ") {
				listen <- strings.TrimPrefix(line, listenLine+" ")
				first = false
				continue
			}
			ch.lines <- line
		}
		close(ch.lines)
		if first {
			close(listen)
		}
		ch.waitc <- cmd.Wait()
	}()
	addr, ok := <-listen
	if !ok {
		return nil, fmt.Errorf("the %s server exited before it listened: %v", role, <-ch.waitc)
	}
	ch.addr = addr
	return ch, nil
}

// stop closes the child's stdin and waits for its report and exit.
func (ch *child) stop() (created int64, st exportStats, err error) {
	_ = ch.stdin.Close()
	found := false
	for line := range ch.lines {
		if !strings.HasPrefix(line, doneLine+" ") {
			continue
		}
		_, serr := fmt.Sscanf(line, doneLine+" created=%d ended=%d exported=%d failed=%d errors=%d",
			&created, &st.ended, &st.exported, &st.failed, &st.errors)
		if serr != nil {
			return 0, st, fmt.Errorf("the %s server's report %q: %w", ch.role, line, serr)
		}
		found = true
	}
	if werr := <-ch.waitc; werr != nil {
		return created, st, fmt.Errorf("the %s server: %w", ch.role, werr)
	}
	if !found {
		return created, st, fmt.Errorf("the %s server exited without a report", ch.role)
	}
	return created, st, nil
}

// childArgs are the orchestrator's own arguments followed by the ones that
// make a server of the given role (flags given later win).
func childArgs(args []string, c *config, role string, extra ...string) []string {
	out := append([]string{}, args...)
	out = append(out, "--role="+role, "--run-id="+c.runID, "--truth="+truthPart(c.truth, role))
	return append(out, extra...)
}

// truthPart is the file a process writes its part of the truth to.
func truthPart(truth, role string) string {
	if truth == "" {
		return ""
	}
	return truth + "." + role + ".part"
}

func executable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding gymsim's own binary: %w", err)
	}
	return exe, nil
}
