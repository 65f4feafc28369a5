// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package e2e holds the end-to-end tests: they start the built otelcol-gym
// binary (and gymsim) as subprocesses on free loopback ports and talk OTLP to
// them with the real OpenTelemetry Go SDK. The binaries are built once per
// test run (or taken from OTELCOL_GYM_BIN and GYMSIM_BIN) and shared by every
// test.
package e2e
