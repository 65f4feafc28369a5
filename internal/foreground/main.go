// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Command foreground runs a command the way a job-control shell runs a
// foreground job: in a process group of its own that owns the terminal, so
// that Ctrl-C reaches the command alone. `make run` runs the collector through
// it. Without it the collector is in make's process group, Ctrl-C's SIGINT
// reaches make too, and make, which takes SIGINT as fatal, exits 130 after
// the collector stopped cleanly; with it, make exits with the collector's
// status: 0 after a clean stop, non-zero when the collector failed.
//
//	foreground <command> [args...]
//
// When standard input is not a terminal, or this process's group is not the
// terminal's foreground group (a script, make in the background), there is
// nothing to hand over: it execs the command in its own place, so the command
// is the caller's child as before. Otherwise it starts the command in a new
// process group placed in the terminal's foreground, passes on the SIGTERM,
// SIGHUP and SIGINT it receives (make sends SIGTERM to its recipe when it is
// terminated), gives the terminal back to its own group once the command has
// exited, and exits with the command's status, or 128+n when signal n ended
// it, as a shell reports it.
//
// The command inherits SIGTTOU and SIGTSTP ignored: SIGTTOU so that the
// terminal can be handed to its new group and back, SIGTSTP so that Ctrl-C's
// neighbour Ctrl-Z does not stop a collector that Gym's processes are sending
// to (stopped in a group of its own, it would also wait on a job the shell
// does not know is stopped).
package main // import "github.com/otelcol-gym/otelcol-gym/internal/foreground"

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: foreground <command> [args...]")
		os.Exit(2)
	}
	os.Exit(run(os.Args[1], os.Args[2:]))
}

// run runs the command and returns the exit status to leave with.
func run(name string, args []string) int {
	path, err := exec.LookPath(name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "foreground: %v\n", err)
		return 127
	}
	if !ownsTerminal(int(os.Stdin.Fd())) {
		err = syscall.Exec(path, append([]string{name}, args...), os.Environ())
		fmt.Fprintf(os.Stderr, "foreground: exec %s: %v\n", path, err)
		return 126
	}
	return runInForeground(path, name, args)
}

// ownsTerminal reports whether fd is a terminal whose foreground process
// group is this process's group.
func ownsTerminal(fd int) bool {
	pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// runInForeground starts the command in a new process group that owns the
// terminal on standard input, passes signals on to it, and takes the
// terminal back when it has exited.
func runInForeground(path, name string, args []string) int {
	tty := int(os.Stdin.Fd())
	signal.Ignore(syscall.SIGTTOU, syscall.SIGTSTP)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)

	cmd := exec.Command(path, args...)
	cmd.Args[0] = name
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: tty}
	// The child hands the terminal to its group before it execs, so the
	// terminal is taken back also when the exec failed.
	defer func() { _ = unix.IoctlSetPointerInt(tty, unix.TIOCSPGRP, unix.Getpgrp()) }()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "foreground: %v\n", err)
		return 126
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-signals:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	return exitStatus(cmd.ProcessState, err)
}

// exitStatus is the status a shell reports for a finished command.
func exitStatus(state *os.ProcessState, err error) int {
	if state == nil {
		fmt.Fprintf(os.Stderr, "foreground: %v\n", err)
		return 126
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		fmt.Fprintf(os.Stderr, "foreground: %v\n", err)
		return 126
	}
	return state.ExitCode()
}
