// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

// Package timesource is where our processors read the time and their tick
// from, so that tests can move a fake clock instead of sleeping.
package timesource // import "github.com/otelcol-gym/otelcol-gym/internal/timesource"

import "time"

// Source is a component's source of time; tests inject a fake one.
type Source interface {
	Now() time.Time
	// NewTicker returns a channel that receives a value every period, and
	// a function that stops it.
	NewTicker(period time.Duration) (<-chan time.Time, func())
}

// Real is the wall clock.
type Real struct{}

// Now is time.Now.
func (Real) Now() time.Time { return time.Now() }

// NewTicker is a time.Ticker's channel and its Stop.
func (Real) NewTicker(period time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(period)
	return t.C, t.Stop
}
