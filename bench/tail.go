// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tailer follows a run's output directory with inotify and notes the time
// each span id first appears on disk (the time the harness read the line,
// within microseconds of the write(2) that put it there, plus the time to
// read the lines queued before it). It also counts distinct non-synthetic
// span ids, which tells the harness when the collector has drained. With
// rollouts (pipeline C), it also follows the per-rollout files and notes
// when each span first appears in one, apart.
type tailer struct {
	dir      string
	pipeline string
	rollouts bool
	fd       int
	stop     chan struct{}
	done     chan struct{}
	files    map[string]*tailFile
	cookies  map[uint32]*tailFile
	err      error
	buf      []byte

	mu        sync.Mutex
	seenAt    map[uint64]int64 // span id -> unix nanos first seen
	rolloutAt map[uint64]int64 // span id -> unix nanos first seen in a per-rollout file
	expected  map[uint64]uint8 // set by want
	inRollout atomic.Int64     // ids seen that expected places in a rollout
	distinct  atomic.Int64
	synth     atomic.Int64
	last      atomic.Int64 // unix nanos of the last new span seen
}

type tailFile struct {
	f       *os.File
	format  string
	rollout bool // a per-rollout file (rolloutAt)
	partial []byte
}

func startTailer(dir, pipeline string, rollouts bool) (*tailer, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_MODIFY|unix.IN_CREATE|unix.IN_MOVED_FROM|unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("inotify_add_watch %s: %w", dir, err)
	}
	t := &tailer{dir: dir, pipeline: pipeline, rollouts: rollouts && pipeline == "C", fd: fd, stop: make(chan struct{}), done: make(chan struct{}),
		files: map[string]*tailFile{}, cookies: map[uint32]*tailFile{}, seenAt: map[uint64]int64{}, rolloutAt: map[uint64]int64{},
		buf: make([]byte, 1<<20)}
	go t.loop()
	return t, nil
}

func (t *tailer) loop() {
	defer close(t.done)
	defer unix.Close(t.fd) //nolint:errcheck
	buf := make([]byte, 64<<10)
	pfd := []unix.PollFd{{Fd: int32(t.fd), Events: unix.POLLIN}}
	for {
		select {
		case <-t.stop:
			t.sweep()
			for _, tf := range t.files {
				_ = tf.f.Close()
			}
			return
		default:
		}
		n, err := unix.Poll(pfd, 50)
		if err != nil && !errors.Is(err, unix.EINTR) {
			t.err = fmt.Errorf("poll: %w", err)
			return
		}
		if n <= 0 {
			continue
		}
		for {
			n, err := unix.Read(t.fd, buf)
			if n <= 0 || err != nil {
				break
			}
			t.events(buf[:n])
		}
	}
}

// events handles a batch of inotify events.
func (t *tailer) events(b []byte) {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0])) //nolint:gosec // kernel ABI
		nameLen := int(ev.Len)
		name := ""
		if nameLen > 0 {
			raw := b[unix.SizeofInotifyEvent : unix.SizeofInotifyEvent+nameLen]
			name = string(bytes.TrimRight(raw, "\x00"))
		}
		b = b[unix.SizeofInotifyEvent+nameLen:]
		switch {
		case ev.Mask&unix.IN_Q_OVERFLOW != 0:
			t.sweep()
		case ev.Mask&unix.IN_MOVED_FROM != 0:
			// A rotation: keep reading the same open file under its new name.
			if tf, ok := t.files[name]; ok {
				t.read(tf)
				t.cookies[ev.Cookie] = tf
				delete(t.files, name)
			}
		case ev.Mask&unix.IN_MOVED_TO != 0:
			if tf, ok := t.cookies[ev.Cookie]; ok {
				delete(t.cookies, ev.Cookie)
				t.files[name] = tf
				t.read(tf)
			} else {
				t.touch(name)
			}
		default:
			t.touch(name)
		}
	}
}

// touch reads whatever is new in a file of the output dir.
func (t *tailer) touch(name string) {
	tf, ok := t.files[name]
	if !ok {
		format, ok := outputFile(t.pipeline, name)
		rollout := false
		if !ok && t.rollouts && strings.HasSuffix(name, ".spans.jsonl") {
			format, ok, rollout = fmtConsole, true, true
		}
		if !ok {
			return
		}
		f, err := os.Open(filepath.Join(t.dir, name))
		if err != nil {
			return
		}
		tf = &tailFile{f: f, format: format, rollout: rollout}
		t.files[name] = tf
	}
	t.read(tf)
}

// sweep reads every span file in the directory to its end.
func (t *tailer) sweep() {
	entries, err := os.ReadDir(t.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		t.touch(e.Name())
	}
}

func (t *tailer) read(tf *tailFile) {
	for {
		n, err := tf.f.Read(t.buf)
		if n > 0 {
			now := time.Now().UnixNano()
			data := t.buf[:n]
			for {
				i := bytes.IndexByte(data, '\n')
				if i < 0 {
					tf.partial = append(tf.partial, data...)
					break
				}
				line := data[:i+1]
				if len(tf.partial) > 0 {
					tf.partial = append(tf.partial, line...)
					line = tf.partial
				}
				t.line(tf, line, now)
				tf.partial = tf.partial[:0]
				data = data[i+1:]
			}
		}
		if err == io.EOF || n == 0 || err != nil {
			return
		}
	}
}

func (t *tailer) line(tf *tailFile, line []byte, now int64) {
	lineSpans(tf.format, line, func(id uint64, synthetic bool) {
		if tf.rollout {
			if !synthetic {
				t.mu.Lock()
				if _, ok := t.rolloutAt[id]; !ok {
					t.rolloutAt[id] = now
				}
				t.mu.Unlock()
			}
			return
		}
		if synthetic {
			t.synth.Add(1)
			return
		}
		t.mu.Lock()
		if _, ok := t.seenAt[id]; !ok {
			t.seenAt[id] = now
			t.distinct.Add(1)
			t.last.Store(now)
			if c, ok := t.expected[id]; ok && c != classNone {
				t.inRollout.Add(1)
			}
		}
		t.mu.Unlock()
	})
}

// want tells the tailer which span ids the load sent and which of them are
// in a rollout; from then on inRollout counts those seen.
func (t *tailer) want(expected map[uint64]uint8) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.expected = expected
	n := int64(0)
	for id := range t.seenAt {
		if c, ok := expected[id]; ok && c != classNone {
			n++
		}
	}
	t.inRollout.Store(n)
}

// close stops the tailer after a last read of every file and returns when
// it has.
func (t *tailer) close() error {
	close(t.stop)
	<-t.done
	return t.err
}

// seen returns the first-seen times (valid after close).
func (t *tailer) seen() map[uint64]int64 { return t.seenAt }

// seenInRollout returns the first-seen times in a per-rollout file (valid
// after close; empty unless the tailer follows them).
func (t *tailer) seenInRollout() map[uint64]int64 { return t.rolloutAt }
