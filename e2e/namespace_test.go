// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Tests that mount file systems or bind the embedded default's fixed ports
// run in a child of this test binary with a mount and a network namespace
// of its own (unshare --mount --net): its mounts are seen by no other
// process, and its loopback is its own. They need root; where there is none,
// or no namespace can be made (a container without CAP_SYS_ADMIN), they are
// skipped with a message, unless requireUnshare says they must run (CI,
// which runs as root, sets it: .ci/run).
const requireUnshare = "OTELCOL_GYM_REQUIRE_UNSHARE"

// namespaceChild names, in the child's environment, the test it runs.
const namespaceChild = "OTELCOL_GYM_NAMESPACE_CHILD"

// inPrivateNamespaces reports whether the calling test runs in its own mount
// and network namespaces with loopback up; when it does not, it runs the
// test there (this binary again, that test alone), reports the child's
// result as its own and returns false: the caller then returns. The
// caller's test runs in parallel with its siblings (t.Parallel) until the
// child is done.
func inPrivateNamespaces(t *testing.T) bool {
	t.Helper()
	if os.Getenv(namespaceChild) == t.Name() {
		if err := loopbackUp(); err != nil {
			t.Fatalf("bringing up loopback in the test's network namespace: %v", err)
		}
		return true
	}
	if os.Getuid() != 0 {
		skipUnlessRequired(t, "needs root: it mounts a tmpfs in a mount namespace of its own (unshare --mount)")
	}
	// The child shares nothing with this process but the binaries, and such
	// tests are slow (a full disk filled, a backend down): they run beside
	// one another, up to -parallel at a time. (The child itself is not
	// parallel: its test may t.Setenv.)
	t.Parallel()
	// The child gets the binaries this process uses, built once.
	env := append(os.Environ(), namespaceChild+"="+t.Name(),
		"OTELCOL_GYM_BIN="+collectorBinary(t), "GYMSIM_BIN="+gymsimBinary(t))
	cmd := exec.Command(os.Args[0], "-test.run="+runPattern(t.Name()), "-test.count=1", "-test.v", "-test.timeout=20m")
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		skipUnlessRequired(t, "cannot make a mount and a network namespace here (unshare needs CAP_SYS_ADMIN): "+err.Error())
	}
	err := cmd.Wait()
	t.Logf("in its own mount and network namespaces:\n%s", out.String())
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		t.Fatalf("the test failed in its namespaces: %v", err)
	case err != nil:
		t.Fatal(err)
	case strings.Contains(out.String(), "--- SKIP: "+t.Name()):
		t.Skip("skipped in its namespaces (above)")
	}
	return false
}

func skipUnlessRequired(t *testing.T, why string) {
	t.Helper()
	if os.Getenv(requireUnshare) != "" {
		t.Fatalf("%s, and %s is set", why, requireUnshare)
	}
	t.Skip(why)
}

// runPattern is the -test.run pattern of exactly the test named name.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// loopbackUp sets the loopback interface up (ip link set lo up).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_LOOPBACK | unix.IFF_RUNNING)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}
