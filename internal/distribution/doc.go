// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package distribution holds the tests of cmd/otelcol-gym that need not link
// it: that its generated files are what the pinned ocb generates from
// builder-config.yaml, at the versions go.mod holds; and one test of the
// repository's own build, that `make fuzz` runs every fuzz target in the
// package that declares it (fuzz_test.go). They live here so that
// `go test -race ./...` never builds the whole distribution with the race
// detector (the binary itself is tested as a subprocess in e2e/).
package distribution
