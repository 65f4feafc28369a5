// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

// Package testpty opens pseudo-terminals for tests that need a process on a
// terminal: one that Ctrl-C is typed into. It is imported only by tests.
package testpty // import "github.com/otelcol-gym/otelcol-gym/internal/testpty"

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Open returns a new pseudo-terminal: the master, which the test reads what
// is printed from and types into, and the terminal the process under test
// gets as its standard streams and controlling terminal (start it with
// syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0} and the terminal
// as its standard input). The caller closes both; the terminal may be closed
// once the process has started.
func Open() (master, tty *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("unlock %s: %w", master.Name(), err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("pseudo-terminal number: %w", err)
	}
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, tty, nil
}
