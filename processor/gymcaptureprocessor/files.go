// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymcaptureprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymcaptureprocessor"

import (
	"container/list"
	"time"
)

// openFileIdle is how long a capture file nothing read stays open.
const openFileIdle = time.Minute

// openFiles bounds the capture files kept open between reads: past max, the
// least recently read is closed; one nothing read for openFileIdle is
// closed; a closed file is opened again at its next read, which goes on from
// where the last stopped.
type openFiles struct {
	lru *list.List // of *rolloutState, most recently read first
	max int
}

// used records a read of r's file at now.
func (f *openFiles) used(r *rolloutState, now time.Time) {
	r.lastRead = now
	switch {
	case !r.tail.isOpen:
		f.close(r)
		return
	case r.opened != nil:
		f.lru.MoveToFront(r.opened)
	default:
		r.opened = f.lru.PushFront(r)
	}
	for f.lru.Len() > f.max {
		f.close(f.lru.Back().Value.(*rolloutState))
	}
}

// close closes r's file, if open.
func (f *openFiles) close(r *rolloutState) {
	r.tail.close()
	if r.opened != nil {
		f.lru.Remove(r.opened)
		r.opened = nil
	}
}

// closeIdle closes the files last read before since.
func (f *openFiles) closeIdle(since time.Time) {
	for e := f.lru.Back(); e != nil && e.Value.(*rolloutState).lastRead.Before(since); e = f.lru.Back() {
		f.close(e.Value.(*rolloutState))
	}
}

func (f *openFiles) closeAll() {
	for e := f.lru.Back(); e != nil; e = f.lru.Back() {
		f.close(e.Value.(*rolloutState))
	}
}
