// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package instrument

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// `otelcol-gym instrument` replaces itself with the command (execve, as
// opentelemetry-instrument does), so the command keeps its pid, its stdio,
// its signals and its exit status untouched. Its private dir must outlive
// the command's processes' start-ups and go when the command ends: a
// cleanup process removes it. The cleanup is `otelcol-gym instrument` again
// with these variables, in a session of its own (a Ctrl-C or a kill of the
// command's process group does not reach it); it watches the command's pid
// (watchExit: with a pidfd on Linux) and removes the dir once the command
// has exited, however it ended (SIGKILL included).
const (
	cleanupEnv    = "OTELCOL_GYM_INSTRUMENT_CLEANUP"     // the dir to remove
	cleanupPIDEnv = "OTELCOL_GYM_INSTRUMENT_CLEANUP_PID" // the pid to outlive
	// cleanupPoll is how often the cleanup looks for its parent's exit where
	// the kernel has no pidfd (Linux before 5.3, darwin).
	cleanupPoll = time.Second
	// privatePrefix names the private dirs under the temporary directory.
	privatePrefix = "otelcol-gym-instrument-"
)

// startCleanup starts the cleanup of dir, due when this process (soon the
// command) exits, and returns once the cleanup watches it.
func startCleanup(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command(self, CommandName)
	cmd.Env = append(os.Environ(), cleanupEnv+"="+dir, cleanupPIDEnv+"="+strconv.Itoa(os.Getpid()))
	cmd.ExtraFiles = []*os.File{w} // fd 3: one byte once it watches
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return fmt.Errorf("starting the cleanup of %s: %w", dir, err)
	}
	// Not waited for: it outlives this process, and init reaps it.
	_ = cmd.Process.Release()
	if _, err := io.ReadFull(r, make([]byte, 1)); err != nil {
		return fmt.Errorf("the cleanup of %s did not start: %w", dir, err)
	}
	return nil
}

// waitReparented returns once pid, this process's parent, has exited: the
// exit reparents this process (to init or a subreaper).
func waitReparented(pid int) {
	for os.Getppid() == pid {
		time.Sleep(cleanupPoll)
	}
}

// runCleanup is the cleanup process: it removes dir once pid has exited.
func runCleanup(dir, pidText string) int {
	ready := os.NewFile(3, "ready")
	pid, err := strconv.Atoi(pidText)
	if err != nil || !isPrivateDir(dir) {
		return 2 // not started by startCleanup: touch nothing
	}
	waitExit := watchExit(pid)
	_, _ = ready.Write([]byte{1})
	ready.Close()
	waitExit()
	if err := os.RemoveAll(dir); err != nil {
		return 1
	}
	return 0
}

// isPrivateDir: dir is one of ours (under the temporary directory, our
// prefix, our marker), so a stray variable cannot make the cleanup remove
// anything else.
func isPrivateDir(dir string) bool {
	if filepath.Dir(dir) != filepath.Clean(os.TempDir()) || !strings.HasPrefix(filepath.Base(dir), privatePrefix) {
		return false
	}
	st, err := os.Lstat(filepath.Join(dir, markerName))
	return err == nil && st.Mode().IsRegular()
}
