// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package pending

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// add adds one group (journal record seq) of lines to name, with a root.
func add(p *Store, seq uint64, name, lines, root string) bool {
	return p.AddGroup(seq, 1<<20, func(a *Adder) {
		if lines != "" {
			f := a.File(name)
			a.Copy(f, []byte(lines))
			a.Count(f, 1, 1)
		}
		if root != "" {
			a.Root(name, []byte(root))
		}
	})
}

func joined(f *File) string {
	var s []byte
	for _, p := range f.Parts {
		s = append(s, p...)
	}
	return string(s)
}

// TestStoreKeepsJournalOrder: a file's lines come out in the order their
// groups came, the bytes gauge follows adds and writes, and Done is the
// first journal position still pending.
func TestStoreKeepsJournalOrder(t *testing.T) {
	var gauge int
	p := NewStore(func(d int) { gauge += d }, 1<<20)
	add(p, 1, "a", "a1\n", "")
	add(p, 2, "b", "b1\n", "")
	add(p, 3, "a", "a2\n", "root-a\n")
	assert.Equal(t, 3+3+3+7, p.Size())
	assert.Equal(t, p.Size(), gauge)
	assert.Equal(t, uint64(1), p.Done())

	files := p.Take(func(f *File) bool { return f.Name == "a" })
	require.Len(t, files, 1)
	a := files[0]
	assert.Equal(t, "a1\na2\n", joined(a))
	assert.Equal(t, 2, a.Lines)
	assert.Equal(t, "root-a\n", string(a.Roots))
	assert.True(t, a.Finished)
	assert.Equal(t, uint64(2), p.Done(), "b's group is still pending")
	assert.False(t, p.IsPending("a"))

	p.Written(files)
	assert.Equal(t, 3, p.Size())
	assert.Equal(t, 3, gauge)
	p.Written(p.Take(func(*File) bool { return true }))
	assert.Equal(t, uint64(4), p.Done(), "everything added is written")
	assert.Zero(t, gauge)
}

// TestStorePutBackGoesFirst: lines a failed append gives back stay ahead of
// those that came since, and their roots stay owed with them; once the
// lines are in their file only the roots are owed.
func TestStorePutBackGoesFirst(t *testing.T) {
	p := NewStore(func(int) {}, 1<<20)
	add(p, 1, "a", "a1\n", "root-a\n")
	failed := p.Take(func(*File) bool { return true })
	add(p, 2, "a", "a2\n", "")
	p.PutBack(failed[0])
	again := p.Take(func(*File) bool { return true })
	require.Len(t, again, 1)
	assert.Equal(t, "a1\na2\n", joined(again[0]))
	assert.Equal(t, 2, again[0].Lines)
	assert.Equal(t, "root-a\n", string(again[0].Roots))

	p.WrittenParts(again[0])
	assert.Empty(t, again[0].Parts)
	assert.Zero(t, again[0].Lines)
	assert.Equal(t, len("root-a\n"), p.Size(), "the root is still owed")
}

// TestStoreWaitBelow: a push waits while the bound is reached, wakes the
// flusher, and goes on once the flusher wrote the lines (or its context ends).
func TestStoreWaitBelow(t *testing.T) {
	p := NewStore(func(int) {}, 1<<20)
	require.NoError(t, p.WaitBelow(context.Background(), 4, func() { t.Fatal("no wake below the bound") }))
	add(p, 1, "a", "a1\n", "root\n")
	flushed := 0
	require.NoError(t, p.WaitBelow(context.Background(), 4, func() {
		flushed++
		p.Written(p.Take(func(*File) bool { return true }))
	}))
	assert.Equal(t, 1, flushed)

	add(p, 2, "a", "a2\n", "root\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, p.WaitBelow(ctx, 4, func() {}), context.Canceled)
}

// TestStoreLongLine: a line longer than a chunk is kept whole.
func TestStoreLongLine(t *testing.T) {
	p := NewStore(func(int) {}, 1<<20)
	long := make([]byte, chunkBytes+10)
	for i := range long {
		long[i] = 'x'
	}
	long[len(long)-1] = '\n'
	add(p, 1, "a", string(long), "")
	add(p, 2, "a", "a2\n", "")
	files := p.Take(func(*File) bool { return true })
	require.Len(t, files, 1)
	assert.Equal(t, string(long)+"a2\n", joined(files[0]))
	p.Written(files)
	assert.Zero(t, p.Size())
}

// TestStoreCloseUnmapsEveryChunk: the chunks a store mapped (kept for
// reuse, current, or holding lines still pending) are all unmapped by
// Close, which may run twice.
func TestStoreCloseUnmapsEveryChunk(t *testing.T) {
	p := NewStore(func(int) {}, 4<<20)
	line := make([]byte, chunkBytes/3)
	for seq := uint64(1); seq <= 12; seq++ {
		add(p, seq, "written", string(line), "")
	}
	p.Written(p.Take(func(*File) bool { return true }))
	add(p, 13, "pending", string(line), "")
	p.Written(nil)
	require.Positive(t, p.mapped)
	require.NotEmpty(t, p.free, "written chunks are kept for reuse")

	p.Close()
	assert.Zero(t, p.mapped, "every mapping is given back")
	p.Close()
	assert.Zero(t, p.mapped)
}

// TestStoreReusesChunks: lines added and written over and over, a flush
// at a time, reuse the same few chunks: the one that stops being current
// after its lines were written goes back for reuse too (it used to stay
// mapped, unreachable, one megabyte per chunk filled).
func TestStoreReusesChunks(t *testing.T) {
	p := NewStore(func(int) {}, 4<<20)
	line := string(make([]byte, chunkBytes/3))
	for seq := uint64(1); seq <= 300; seq++ {
		add(p, seq, "a", line, "")
		p.Written(p.Take(func(*File) bool { return true }))
	}
	assert.LessOrEqual(t, p.mapped, 2, "chunks mapped after 100 chunks' worth of lines, each written before the next came")
	p.Close()
	assert.Zero(t, p.mapped)
}

// TestStoreEmptyCopyHoldsNoChunk: an empty piece adds no part, so no file
// holds a chunk it has nothing live in: its drop would put the chunk on
// the free list twice, and two later lines would share its memory.
func TestStoreEmptyCopyHoldsNoChunk(t *testing.T) {
	p := NewStore(func(int) {}, 4<<20)
	third := string(make([]byte, chunkBytes/3))
	add(p, 1, "a", third, "")
	p.Written(p.Take(func(*File) bool { return true }))
	p.AddGroup(2, 1<<20, func(a *Adder) { a.Copy(a.File("b"), nil) })
	add(p, 3, "c", string(make([]byte, chunkBytes*7/10)), "") // the current chunk is full: a new one
	p.Written(p.Take(func(*File) bool { return true }))
	seen := map[*chunk]bool{}
	for _, c := range p.free {
		assert.False(t, seen[c], "a chunk on the free list twice")
		seen[c] = true
	}
}
