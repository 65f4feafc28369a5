// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otelcol-gym/otelcol-gym/internal/testpty"
)

// The test binary plays three parts, chosen by its first argument:
//
//	outer <mode>        make: runs `foreground`, then reports its status,
//	                    whether the terminal is back and whether it got SIGINT
//	foreground <cmd...> this command
//	command <mode>      the collector: waits for SIGINT or SIGTERM, or exits
//
// The tests start `outer` as a session leader on a pseudo-terminal, as a
// login shell's foreground job owns its terminal.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 {
		switch os.Args[1] {
		case "outer":
			os.Exit(outer(os.Args[2]))
		case "foreground":
			os.Exit(run(os.Args[2], os.Args[3:]))
		case "command":
			os.Exit(command(os.Args[2]))
		}
	}
	os.Exit(m.Run())
}

func outer(mode string) int {
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, syscall.SIGINT)
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "foreground", exe, "command", mode)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Println("outer:", err)
		return 1
	}
	fmt.Printf("foreground=%d\n", cmd.Process.Pid)
	_ = cmd.Wait()
	back := ownsTerminal(0)
	select {
	case <-interrupted:
		fmt.Printf("status=%d terminal_back=%t outer_interrupted=true\n", cmd.ProcessState.ExitCode(), back)
	default:
		fmt.Printf("status=%d terminal_back=%t outer_interrupted=false\n", cmd.ProcessState.ExitCode(), back)
	}
	return 0
}

func command(mode string) int {
	switch mode {
	case "exit3":
		return 3
	case "pid":
		fmt.Printf("pid=%d\n", os.Getpid())
		return 0
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	fmt.Printf("ready owns_terminal=%t\n", ownsTerminal(0))
	s := <-stop
	fmt.Printf("stopped by %s\n", s)
	return 0
}

// session is `outer` running on a pseudo-terminal.
type session struct {
	t      *testing.T
	master *os.File
	cmd    *exec.Cmd
	lines  chan string
}

func startSession(t *testing.T, mode string) *session {
	t.Helper()
	master, tty, err := testpty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	defer tty.Close()

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "outer", mode)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, master: master, cmd: cmd, lines: make(chan string, 100)}
	go func() {
		sc := bufio.NewScanner(master)
		for sc.Scan() {
			// The terminal echoes a typed ^C before what follows it.
			s.lines <- strings.TrimPrefix(strings.TrimSpace(sc.Text()), "^C")
		}
		close(s.lines)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return s
}

// expect waits for a line that starts with prefix and returns it.
func (s *session) expect(prefix string) string {
	s.t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				s.t.Fatalf("the terminal closed before a line %q", prefix)
			}
			s.t.Logf("terminal: %q", line)
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-timeout:
			s.t.Fatalf("no line %q within a minute", prefix)
		}
	}
}

func (s *session) wait() {
	s.t.Helper()
	if err := s.cmd.Wait(); err != nil {
		s.t.Fatalf("outer: %v", err)
	}
}

// Ctrl-C on the terminal reaches the command alone, and so does a SIGTERM to
// foreground (make sends it to its recipe when it is terminated): make
// (outer) is not interrupted, gets the command's status and has its terminal
// back.
func TestStopsReachTheCommand(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stop    func(s *session, foreground int) error
		stopped string
	}{
		{"Ctrl-C", func(s *session, _ int) error {
			_, err := s.master.Write([]byte{3}) // ^C, as typed
			return err
		}, "stopped by interrupt"},
		{"SIGTERM to foreground", func(_ *session, foreground int) error {
			return syscall.Kill(foreground, syscall.SIGTERM)
		}, "stopped by terminated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startSession(t, "wait")
			pid, err := strconv.Atoi(strings.TrimPrefix(s.expect("foreground="), "foreground="))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.expect("ready"); got != "ready owns_terminal=true" {
				t.Errorf("the command: %q, want it to own the terminal", got)
			}
			if err := tc.stop(s, pid); err != nil {
				t.Fatal(err)
			}
			s.expect(tc.stopped)
			if got := s.expect("status="); got != "status=0 terminal_back=true outer_interrupted=false" {
				t.Errorf("outer: %q", got)
			}
			s.wait()
		})
	}
}

// A command that fails fails foreground with its status.
func TestExitStatusIsTheCommands(t *testing.T) {
	s := startSession(t, "exit3")
	if got := s.expect("status="); got != "status=3 terminal_back=true outer_interrupted=false" {
		t.Errorf("outer: %q", got)
	}
	s.wait()

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "foreground", "/nonexistent/otelcol-gym")
	if err := cmd.Run(); cmd.ProcessState.ExitCode() != 127 {
		t.Errorf("a missing command: %v, want exit status 127", err)
	}
}

// Without a terminal foreground execs the command in its place.
func TestWithoutTerminalTheCommandTakesItsPlace(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "foreground", exe, "command", "pid")
	out, err := cmd.Output() // standard input is /dev/null
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("pid=%d\n", cmd.Process.Pid); string(out) != want {
		t.Errorf("the command printed %q, want %q: it runs in foreground's process", out, want)
	}
}

func TestSignalledCommandStatus(t *testing.T) {
	cmd := exec.Command("sh", "-c", "kill -KILL $$")
	err := cmd.Run()
	if got := exitStatus(cmd.ProcessState, err); got != 128+int(syscall.SIGKILL) {
		t.Errorf("status %d, want %d", got, 128+int(syscall.SIGKILL))
	}
}
