// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package e2e holds the end-to-end tests: they start the built otelcol-gym
// binary (and gymsim) as subprocesses on free loopback ports and talk OTLP to
// them with the real OpenTelemetry Go SDK. The binaries are built once per
// test run (or taken from OTELCOL_GYM_BIN and GYMSIM_BIN) and shared by every
// test.
//
// Tests that mount file systems or run the embedded default on its fixed
// ports (TestFullDisk: the capture dir on a small tmpfs, filled, made
// read-only, the collector killed) run in a child of the test binary with a
// mount and a network namespace of their own (namespace_test.go). They need
// root; without it they are skipped with a message, unless
// OTELCOL_GYM_REQUIRE_UNSHARE is set (CI, .ci/run), which makes that a
// failure.
package e2e
