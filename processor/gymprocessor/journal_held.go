// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The held range: the batches the next consumer refused (redeliver.go), in
// the storage until it takes them, so that a kill -9 during an outage loses
// none of them. Keys, beside the journal's (journal.go):
//
//	held            the range's header: the first key that may be held, the next to assign (JSON)
//	held/<key>      one refused batch, OTLP protobuf in a record frame of kind 'H'
//
// The range is outside the generations: its batches are output, decided
// already, so a start under another configuration or build (which sets the
// journal's generation aside) still hands them on as they are. A batch is
// written together with its round's delivered mark, in one transaction, and
// deleted once the next consumer took it; after a kill between the two it is
// handed on again at the next start, and gymspans drops what it already
// wrote (design §4.6).

const (
	heldHeaderKey      = "held"
	recordHeld    byte = 'H'
	heldLoadChunk      = 256
)

func heldKey(k uint64) string { return fmt.Sprintf("held/%016x", k) }

// heldRange is the held range's header.
type heldRange struct {
	First uint64 `json:"first"`
	Next  uint64 `json:"next"`
}

func (h heldRange) encode() []byte {
	b, _ := json.Marshal(h)
	return b
}

// hold writes bs to the held range, each under a new key, with round seq's
// delivered mark (seq 0: none), in one transaction; on success each batch
// has its key.
func (j *journal) hold(ctx context.Context, seq uint64, bs []*heldBatch) error {
	j.metaMu.Lock()
	defer j.metaMu.Unlock()
	if !j.heldRead {
		return errors.New("gym processor storage: the held range was not readable at start; refused batches stay in memory")
	}
	r := j.held
	if r.Next == 0 {
		r = heldRange{First: 1, Next: 1}
	}
	ops := make([]*storage.Operation, 0, len(bs)+2)
	for i, b := range bs {
		v, err := encodeHeld(b.td)
		if err != nil {
			return err
		}
		ops = append(ops, storage.SetOperation(heldKey(r.Next+uint64(i)), v))
	}
	next := r.Next + uint64(len(bs))
	ops = append(ops, storage.SetOperation(heldHeaderKey, heldRange{First: r.First, Next: next}.encode()))
	if seq != 0 {
		ops = append(ops, storage.SetOperation(recordKey(j.meta.Generation, 'd', seq), deliveredValue))
	}
	if err := j.client.Batch(ctx, ops...); err != nil {
		return fmt.Errorf("gym processor storage: keeping %d refused batches for redelivery: %w", len(bs), err)
	}
	for i, b := range bs {
		b.key = r.Next + uint64(i)
	}
	j.held = heldRange{First: r.First, Next: next}
	return nil
}

// rewriteHeld replaces a held batch by the part of it still refused.
func (j *journal) rewriteHeld(ctx context.Context, b *heldBatch) error {
	v, err := encodeHeld(b.td)
	if err != nil {
		return err
	}
	if err := j.client.Set(ctx, heldKey(b.key), v); err != nil {
		return fmt.Errorf("gym processor storage: rewriting a batch held for redelivery: %w", err)
	}
	return nil
}

// release deletes the held batches the next consumer took; first is the
// smallest key still held (0: none).
func (j *journal) release(ctx context.Context, keys []uint64, first uint64) error {
	j.metaMu.Lock()
	defer j.metaMu.Unlock()
	r := j.held
	if first == 0 {
		first = r.Next
	}
	ops := make([]*storage.Operation, 0, len(keys)+1)
	for _, k := range keys {
		ops = append(ops, storage.DeleteOperation(heldKey(k)))
	}
	r.First = max(r.First, first)
	ops = append(ops, storage.SetOperation(heldHeaderKey, r.encode()))
	if err := j.client.Batch(ctx, ops...); err != nil {
		return fmt.Errorf("gym processor storage: forgetting %d batches delivered again: %w", len(keys), err)
	}
	j.held = r
	return nil
}

// loadHeld reads the held range at start. A batch that fails its checksum
// or does not decode is reported in bad and deleted.
func (j *journal) loadHeld(ctx context.Context) (bs []*heldBatch, bad error, err error) {
	raw, err := j.client.Get(ctx, heldHeaderKey)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the held range's header: %w", err)
	}
	var r heldRange
	if raw != nil {
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, nil, fmt.Errorf("the held range's header is not readable (%d bytes): %w", len(raw), err)
		}
	}
	defer func() {
		if err == nil {
			j.metaMu.Lock()
			j.held, j.heldRead = r, true
			j.metaMu.Unlock()
		}
	}()
	var corrupt []*storage.Operation
	for k := r.First; k < r.Next; k += heldLoadChunk {
		ops := make([]*storage.Operation, 0, heldLoadChunk)
		for i := k; i < min(k+heldLoadChunk, r.Next); i++ {
			ops = append(ops, storage.GetOperation(heldKey(i)))
		}
		if err := j.client.Batch(ctx, ops...); err != nil {
			return nil, nil, fmt.Errorf("reading the held range from %d: %w", k, err)
		}
		for i, op := range ops {
			if op.Value == nil {
				continue // delivered
			}
			td, derr := decodeHeld(op.Value)
			if derr != nil {
				bad = fmt.Errorf("held batch %d: %w", k+uint64(i), derr)
				corrupt = append(corrupt, storage.DeleteOperation(op.Key))
				continue
			}
			b := newHeldBatch(td)
			b.key = k + uint64(i)
			bs = append(bs, b)
		}
	}
	if len(corrupt) > 0 {
		if err := j.client.Batch(ctx, corrupt...); err != nil {
			return nil, nil, fmt.Errorf("deleting corrupt held batches: %w", err)
		}
	}
	return bs, bad, nil
}

func encodeHeld(td ptrace.Traces) ([]byte, error) {
	payload, err := batchMarshaler.MarshalTraces(td)
	if err != nil {
		return nil, fmt.Errorf("gym processor storage: encoding a batch held for redelivery: %w", err)
	}
	b := encodeRecord(recordHeld, payload)
	sealRecord(b, 0)
	return b, nil
}

func decodeHeld(v []byte) (ptrace.Traces, error) {
	kind, _, payload, err := decodeRecord(v)
	if err == nil && kind != recordHeld {
		err = fmt.Errorf("%w: held key holds a record of kind %q", errCorruptRecord, kind)
	}
	if err != nil {
		return ptrace.Traces{}, err
	}
	td, err := spanUnmarshaler.UnmarshalTraces(payload)
	if err != nil {
		return ptrace.Traces{}, fmt.Errorf("%w: %w", errCorruptRecord, err)
	}
	return td, nil
}
