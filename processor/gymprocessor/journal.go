// Copyright The otelcol-gym Authors
// SPDX-License-Identifier: Apache-2.0

package gymprocessor // import "github.com/otelcol-gym/otelcol-gym/processor/gymprocessor"

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"time"

	"github.com/klauspost/compress/s2"

	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// The journal: what the processor records in its storage extension so that
// a kill -9 loses no span it acknowledged (design §4.6).
//
// The engine is deterministic: the same batches at the same times, with the
// same timer ticks between them, take it through the same states and make it
// emit the same spans. So the journal records the engine's inputs, not its
// state: every batch as it arrived (before ConsumeTraces returns) and every
// timer tick, each with the clock's time and a sequence number (the engine
// takes the records in sequence order, at their recorded times); and, once a round's output has been handed to the
// next consumer, that it was delivered. From time to time the whole engine
// state is written as a checkpoint and the records before it are deleted,
// which bounds the store. On start the processor loads the checkpoint,
// replays the records after it at their recorded times, hands on the output
// of every replayed round not marked delivered, and drops the rest: deadlines,
// settle and cuts resume as if the collector had not stopped. A round that
// was delivered just before the kill, and not yet marked so, is delivered
// again (counted; gymspans drops spans it already wrote).
//
// Keys, in the storage client the extension gives the processor:
//
//	meta                     the journal's header (journalMeta, JSON)
//	g<gen>/c/<seq>.<part>    the checkpoint: the engine's state after record <seq>, in parts
//	g<gen>/r/<seq>           record <seq>: a batch, a tick or a restart
//	g<gen>/d/<seq>           record <seq>'s round was delivered
//
// <seq> is 16 hex digits, so keys sort by sequence. A generation holds one
// configuration's journal: content written by another configuration or
// another build of the engine (which might decide differently on replay), or
// that fails its checksum, is set aside as a whole and a new generation
// begins; the generation set aside last is kept for inspection.

const (
	journalFormat = 4
	metaKey       = "meta"
	recordMagic   = "GYMJ"
)

// Record kinds.
const (
	recordBatch      byte = 'B'
	recordTick       byte = 'T'
	recordCheckpoint byte = 'C'
	// recordRestart: the collector started again on what the journal held
	// (crash.go, restarted). Format 4.
	recordRestart byte = 'S'
)

// journalMeta is the journal's header.
type journalMeta struct {
	Format      int    `json:"format"`
	Generation  uint64 `json:"generation"`
	Fingerprint string `json:"fingerprint"`
	// Checkpoint is the sequence of the record the checkpoint follows, when
	// HasCheckpoint; without one, replay starts from an empty engine.
	Checkpoint    uint64 `json:"checkpoint"`
	HasCheckpoint bool   `json:"has_checkpoint"`
	// Parts is the number of the checkpoint's parts.
	Parts int `json:"parts,omitempty"`
	// First is the first record kept (Checkpoint + 1 once compacted).
	First uint64 `json:"first"`
	// Aside is the generation set aside last, 0 if none; AsideWhy says why.
	Aside    uint64 `json:"aside,omitempty"`
	AsideWhy string `json:"aside_why,omitempty"`
	// Config is the configuration that wrote the generation, for the log
	// line of a mismatch.
	Config json.RawMessage `json:"config,omitempty"`
}

func recordKey(gen uint64, kind byte, seq uint64) string {
	return fmt.Sprintf("g%d/%c/%016x", gen, kind, seq)
}

func checkpointKey(gen, seq uint64, part int) string {
	return fmt.Sprintf("g%d/c/%016x.%04x", gen, seq, part)
}

// checkpointPart bounds a checkpoint part: the store writes one part a
// transaction, so a record waiting behind the checkpoint waits for one
// part, not for the whole state.
const checkpointPart = 1 << 20

// fingerprint names what a replay's decisions depend on: the configuration
// and the engine's build. A journal written under another fingerprint may
// not be replayed.
func fingerprint(cfg *Config) (string, json.RawMessage) {
	conf, _ := json.Marshal(cfg)
	h := sha256.New()
	h.Write(conf)
	fmt.Fprintf(h, "\x00format=%d\x00build=%s", journalFormat, engineBuild())
	return hex.EncodeToString(h.Sum(nil)[:16]), conf
}

// engineBuild identifies the binary's code: its VCS revision when it was
// stamped in, else its main module version.
func engineBuild() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return bi.Main.Version
}

// recordHead is the bytes before a record's payload: magic, format, kind,
// time.
const recordHead = len(recordMagic) + 2 + 8

// encodeRecord frames a record: magic, format, kind, time, the payload
// compressed with S2 (batches and checkpoints are OTLP protobuf and varints,
// which it shrinks a few times at about a GB/s, so the store writes a
// fraction of the bytes), room for the CRC-32 that sealRecord sets. The
// payload is compressed into a scratch buffer kept between calls and the
// record allocated at its compressed size: a batch's worst-case bound,
// zeroed, is several times what its record holds.
func encodeRecord(kind byte, payload []byte) []byte {
	sp := encodeScratch.Get().(*[]byte)
	defer encodeScratch.Put(sp)
	if need := s2.MaxEncodedLen(len(payload)); cap(*sp) < need {
		*sp = make([]byte, need)
	}
	enc := s2.Encode((*sp)[:cap(*sp)], payload)
	b := make([]byte, recordHead, recordHead+len(enc)+4)
	copy(b, recordMagic)
	b[len(recordMagic)], b[len(recordMagic)+1] = journalFormat, kind
	b = append(b, enc...)
	return append(b, 0, 0, 0, 0)
}

// encodeScratch holds the compression buffers of encodeRecord.
var encodeScratch = sync.Pool{New: func() any { return new([]byte) }}

// sealRecord sets an encoded record's time and checksum (a record's time is
// known only once it is queued, after its payload was compressed).
func sealRecord(b []byte, now int64) {
	binary.BigEndian.PutUint64(b[len(recordMagic)+2:], uint64(now))
	body := b[:len(b)-4]
	binary.BigEndian.PutUint32(b[len(b)-4:], crc32.ChecksumIEEE(body))
}

var errCorruptRecord = errors.New("corrupt journal record")

// decodeRecord checks a record's frame and returns its kind, time and payload.
func decodeRecord(b []byte) (kind byte, now int64, payload []byte, err error) {
	const head = recordHead
	if len(b) < head+4 || string(b[:len(recordMagic)]) != recordMagic {
		return 0, 0, nil, fmt.Errorf("%w: bad frame (%d bytes)", errCorruptRecord, len(b))
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return 0, 0, nil, fmt.Errorf("%w: checksum mismatch", errCorruptRecord)
	}
	if v := b[len(recordMagic)]; v != journalFormat {
		return 0, 0, nil, fmt.Errorf("%w: format %d, this build reads %d", errCorruptRecord, v, journalFormat)
	}
	payload, err = s2.Decode(nil, body[head:])
	if err != nil {
		return 0, 0, nil, fmt.Errorf("%w: %w", errCorruptRecord, err)
	}
	return b[len(recordMagic)+1], int64(binary.BigEndian.Uint64(b[len(recordMagic)+2:])), payload, nil
}

// journal writes and reads the processor's records in a storage client.
// Records are written without the processor's lock, in group commits
// (write); the processor applies them to the engine in sequence order.
type journal struct {
	client storage.Client
	meta   journalMeta
	// fingerprint and config are this processor's (see fingerprint).
	fingerprint string
	config      json.RawMessage
	next        uint64 // sequence of the next record written (commit's, or before Start)
	// bytes counts the records written since the checkpoint.
	bytes atomic.Int64
	// metaMu orders the header's changes: records are written under the
	// processor's lock, a checkpoint without it.
	metaMu sync.Mutex
	// qmu guards the group commit's queue (write): records waiting for
	// the next transaction, whether one is being written, and marks, the
	// delivered rounds not yet marked in the store, each written with the
	// next records (a tick comes at least every second), so a mark costs no
	// transaction of its own. written is signalled when a commit ends.
	qmu     sync.Mutex
	written *sync.Cond
	queue   []*pendingRecord
	writing bool
	marks   []uint64
	// lastCheckpoint is when the processor last wrote a checkpoint (crash.go),
	// checkpointSize its bytes.
	lastCheckpoint time.Time
	checkpointSize int64
	// held is the held range's header (journal_held.go), under metaMu;
	// heldRead, that it was read at start (only then may it be written).
	held     heldRange
	heldRead bool
}

// loadedJournal is what the journal held at start.
type loadedJournal struct {
	checkpoint []byte // nil: replay from an empty engine
	records    []loadedRecord
	// corrupt, when set, ended the load early: the records before it are
	// replayed, and the generation is then set aside.
	corrupt error
}

type loadedRecord struct {
	seq       uint64
	kind      byte
	now       int64
	payload   []byte
	delivered bool
}

// openJournal reads the header. A header of another format or fingerprint
// starts a new generation (the old one is set aside); load then finds
// nothing to replay.
func openJournal(ctx context.Context, client storage.Client, cfg *Config) (*journal, string, error) {
	fp, conf := fingerprint(cfg)
	j := &journal{client: client, fingerprint: fp, config: conf}
	j.written = sync.NewCond(&j.qmu)
	raw, err := client.Get(ctx, metaKey)
	if err != nil {
		return nil, "", fmt.Errorf("reading the journal header: %w", err)
	}
	var why string
	switch {
	case raw == nil:
		j.meta = journalMeta{Format: journalFormat, Generation: 1, First: 1}
	case json.Unmarshal(raw, &j.meta) != nil:
		why = fmt.Sprintf("its header is not readable (%d bytes)", len(raw))
	case j.meta.Format != journalFormat:
		why = fmt.Sprintf("it has format %d, this build reads %d", j.meta.Format, journalFormat)
	case j.meta.Fingerprint != fp:
		why = "it was written by another configuration of this processor, or another build of otelcol-gym (" +
			j.meta.Fingerprint + ", this one " + fp + "); its config was " + string(j.meta.Config)
	}
	if why != "" {
		if err := j.setAside(ctx, why); err != nil {
			return nil, "", err
		}
	}
	j.meta.Fingerprint, j.meta.Config = fp, conf
	j.next = j.meta.First
	return j, why, nil
}

// load reads the checkpoint and the records after it, in order, with the
// delivered marks. It stops at the first record missing (the end) or
// corrupt (reported in corrupt).
func (j *journal) load(ctx context.Context) (*loadedJournal, error) {
	lj := &loadedJournal{}
	gen := j.meta.Generation
	if j.meta.HasCheckpoint {
		var state []byte
		for part := range max(1, j.meta.Parts) {
			b, err := j.client.Get(ctx, checkpointKey(gen, j.meta.Checkpoint, part))
			if err != nil {
				return nil, fmt.Errorf("reading the checkpoint: %w", err)
			}
			kind, _, payload, derr := decodeRecord(b)
			if derr == nil && kind != recordCheckpoint {
				derr = fmt.Errorf("%w: checkpoint key holds a record of kind %q", errCorruptRecord, kind)
			}
			if derr != nil {
				lj.corrupt = fmt.Errorf("checkpoint %d, part %d: %w", j.meta.Checkpoint, part, derr)
				return lj, nil
			}
			state = append(state, payload...)
		}
		lj.checkpoint = state
	}
	const chunk = 256
	for seq := j.next; ; seq += chunk {
		ops := make([]*storage.Operation, 0, 2*chunk)
		for s := seq; s < seq+chunk; s++ {
			ops = append(ops, storage.GetOperation(recordKey(gen, 'r', s)), storage.GetOperation(recordKey(gen, 'd', s)))
		}
		if err := j.client.Batch(ctx, ops...); err != nil {
			return nil, fmt.Errorf("reading records from %d: %w", seq, err)
		}
		for i := 0; i < len(ops); i += 2 {
			s := seq + uint64(i/2)
			if ops[i].Value == nil {
				j.next = s
				return lj, nil
			}
			kind, now, payload, err := decodeRecord(ops[i].Value)
			if err == nil && kind != recordBatch && kind != recordTick && kind != recordRestart {
				err = fmt.Errorf("%w: unknown kind %q", errCorruptRecord, kind)
			}
			if err != nil {
				lj.corrupt = fmt.Errorf("record %d: %w", s, err)
				j.next = s
				return lj, nil
			}
			lj.records = append(lj.records, loadedRecord{seq: s, kind: kind, now: now, payload: payload, delivered: ops[i+1].Value != nil})
		}
	}
}

// write records a batch or tick: it encodes the record, takes the clock's
// time for it (in the order records are queued, so times never go back
// along the sequence), and waits until the record is in the store. Records
// queued while another caller's transaction runs are written together in
// the next one (a group commit: one transaction for all the callers that
// arrived meanwhile, instead of one each, and none of it under the
// processor's lock). It returns the record's sequence and time; on error
// nothing of it was written and it has no sequence (the sequences stay
// contiguous).
func (j *journal) write(ctx context.Context, kind byte, clk clock, payload []byte) (uint64, int64, error) {
	t := &pendingRecord{kind: kind, b: encodeRecord(kind, payload)}
	j.qmu.Lock()
	defer j.qmu.Unlock()
	t.now = clk.Now().UnixNano()
	sealRecord(t.b, t.now)
	j.queue = append(j.queue, t)
	for !t.done {
		if j.writing {
			j.written.Wait()
			continue
		}
		group, marks := j.queue, j.marks
		j.queue, j.marks, j.writing = nil, nil, true
		j.qmu.Unlock()
		err := j.commit(ctx, group, marks)
		j.qmu.Lock()
		j.writing = false
		if err != nil {
			j.marks = append(j.marks, marks...) // they go with the next record
		}
		for _, g := range group {
			g.done, g.err = true, err
		}
		j.written.Broadcast()
	}
	return t.seq, t.now, t.err
}

// pendingRecord is a record queued for the next group commit.
type pendingRecord struct {
	kind byte
	now  int64
	b    []byte
	// Set by the commit: done, and either the sequence or the error.
	done bool
	seq  uint64
	err  error
}

// commit writes a group of records, in order, with the delivered marks, in
// one transaction, and gives each its sequence. Only one commit runs at a
// time (the writing flag), so next is the commit's alone.
func (j *journal) commit(ctx context.Context, group []*pendingRecord, marks []uint64) error {
	j.metaMu.Lock()
	defer j.metaMu.Unlock()
	ops := make([]*storage.Operation, 0, 1+len(group)+len(marks))
	first := j.next
	for i, g := range group {
		ops = append(ops, storage.SetOperation(recordKey(j.meta.Generation, 'r', first+uint64(i)), g.b))
	}
	for _, m := range marks {
		// A mark of a round a checkpoint has covered meanwhile is not
		// needed: its record is gone, and the mark would outlive it.
		if !j.meta.HasCheckpoint || m > j.meta.Checkpoint {
			ops = append(ops, storage.SetOperation(recordKey(j.meta.Generation, 'd', m), deliveredValue))
		}
	}
	if first == j.meta.First && !j.meta.HasCheckpoint {
		// The generation's first record: its header goes with it.
		m, _ := json.Marshal(j.meta)
		ops = append(ops, storage.SetOperation(metaKey, m))
	}
	if err := j.client.Batch(ctx, ops...); err != nil {
		return fmt.Errorf("gym processor storage: recording %s: %w", groupName(group), err)
	}
	var n int64
	for i, g := range group {
		g.seq = first + uint64(i)
		n += int64(len(g.b))
	}
	j.next += uint64(len(group))
	j.bytes.Add(n)
	return nil
}

// groupName names what a failed commit held, for its error.
func groupName(group []*pendingRecord) string {
	if len(group) == 1 {
		return "a " + recordName(group[0].kind)
	}
	return fmt.Sprintf("%d records", len(group))
}

var deliveredValue = []byte{1}

// mark queues round seq's delivered mark for the next commit.
func (j *journal) mark(seq uint64) {
	j.qmu.Lock()
	j.marks = append(j.marks, seq)
	j.qmu.Unlock()
}

// pendingMarks is the number of delivered marks not yet written.
func (j *journal) pendingMarks() int {
	j.qmu.Lock()
	defer j.qmu.Unlock()
	return len(j.marks)
}

// dropMarks forgets the marks not yet written: a checkpoint after every
// round so far was delivered has made them needless.
func (j *journal) dropMarks() {
	j.qmu.Lock()
	j.marks = j.marks[:0]
	j.qmu.Unlock()
}

// writeMarks writes the pending delivered marks now (at the end of a
// recovery, when no record may follow soon).
func (j *journal) writeMarks(ctx context.Context) error {
	j.qmu.Lock()
	defer j.qmu.Unlock()
	if len(j.marks) == 0 {
		return nil
	}
	ops := make([]*storage.Operation, 0, len(j.marks))
	for _, m := range j.marks {
		ops = append(ops, storage.SetOperation(recordKey(j.meta.Generation, 'd', m), deliveredValue))
	}
	if err := j.client.Batch(ctx, ops...); err != nil {
		return fmt.Errorf("gym processor storage: marking rounds delivered: %w", err)
	}
	j.marks = j.marks[:0]
	return nil
}

func recordName(kind byte) string {
	switch kind {
	case recordBatch:
		return "batch"
	case recordTick:
		return "timer tick"
	case recordRestart:
		return "restart"
	}
	return "record"
}

// checkpoint writes state as the state after record seq, in parts of one
// transaction each, then the header that points at it, then deletes what it
// replaces. Records after seq are written meanwhile (the processor's lock
// is not held: only the snapshot needed it); seq's round and every round
// before it were delivered.
func (j *journal) checkpoint(ctx context.Context, seq uint64, state []byte) error {
	gen := j.meta.Generation
	parts := 0
	for off := 0; off < len(state) || parts == 0; off += checkpointPart {
		b := encodeRecord(recordCheckpoint, state[off:min(off+checkpointPart, len(state))])
		sealRecord(b, 0)
		if err := j.client.Set(ctx, checkpointKey(gen, seq, parts), b); err != nil {
			return fmt.Errorf("gym processor storage: writing a checkpoint: %w", err)
		}
		parts++
	}
	j.metaMu.Lock()
	old := j.meta
	j.meta.Checkpoint, j.meta.HasCheckpoint, j.meta.First, j.meta.Parts = seq, true, seq+1, parts
	m, _ := json.Marshal(j.meta)
	err := j.client.Set(ctx, metaKey, m)
	if err != nil {
		j.meta = old
	}
	j.metaMu.Unlock()
	if err != nil {
		return fmt.Errorf("gym processor storage: writing a checkpoint: %w", err)
	}
	return j.deleteRange(ctx, old, seq)
}

// deleteRange deletes the checkpoint old points at (if any) and the records
// and marks of its generation from old.First to last.
func (j *journal) deleteRange(ctx context.Context, old journalMeta, last uint64) error {
	gen := old.Generation
	var ops []*storage.Operation
	if old.HasCheckpoint {
		for part := range max(1, old.Parts) {
			ops = append(ops, storage.DeleteOperation(checkpointKey(gen, old.Checkpoint, part)))
		}
	}
	for s := old.First; s <= last; s++ {
		ops = append(ops, storage.DeleteOperation(recordKey(gen, 'r', s)), storage.DeleteOperation(recordKey(gen, 'd', s)))
		if len(ops) >= 1024 {
			if err := j.client.Batch(ctx, ops...); err != nil {
				return fmt.Errorf("gym processor storage: deleting replaced records: %w", err)
			}
			ops = ops[:0]
		}
	}
	if len(ops) == 0 {
		return nil
	}
	if err := j.client.Batch(ctx, ops...); err != nil {
		return fmt.Errorf("gym processor storage: deleting replaced records: %w", err)
	}
	return nil
}

// setAside starts a new generation; the current one stays for inspection,
// and the one set aside before it is deleted.
func (j *journal) setAside(ctx context.Context, why string) error {
	old := j.meta
	if old.Aside > 0 {
		j.deleteGeneration(ctx, old.Aside)
	}
	j.meta = journalMeta{Format: journalFormat, Generation: old.Generation + 1, First: 1, Aside: old.Generation, AsideWhy: why,
		Fingerprint: j.fingerprint, Config: j.config}
	if old.Generation == 0 {
		// An unreadable header: which generations hold keys is unknown, so
		// the new one is numbered apart from any (the old keys stay).
		j.meta.Generation, j.meta.Aside = uint64(time.Now().UnixNano()), 0
	}
	j.next = 1
	m, _ := json.Marshal(j.meta)
	if err := j.client.Set(ctx, metaKey, m); err != nil {
		return fmt.Errorf("gym processor storage: setting aside the journal: %w", err)
	}
	return nil
}

// deleteGeneration deletes every key of generation gen when the client can
// walk its keys (file_storage can); otherwise they stay.
func (j *journal) deleteGeneration(ctx context.Context, gen uint64) {
	w, ok := j.client.(storage.Walker)
	if !ok {
		return
	}
	prefix := fmt.Sprintf("g%d/", gen)
	_ = w.Walk(ctx, func(key string, _ []byte) ([]*storage.Operation, error) {
		if len(key) >= len(prefix) && key[:len(prefix)] == prefix {
			return []*storage.Operation{storage.DeleteOperation(key)}, nil
		}
		return nil, nil
	})
}

// reset empties the generation after a shutdown that delivered everything:
// the next start has nothing to replay.
func (j *journal) reset(ctx context.Context) error {
	j.metaMu.Lock()
	old := j.meta
	j.meta.Checkpoint, j.meta.HasCheckpoint, j.meta.First, j.meta.Parts = 0, false, j.next, 0
	m, _ := json.Marshal(j.meta)
	err := j.client.Set(ctx, metaKey, m)
	j.metaMu.Unlock()
	if err != nil {
		return fmt.Errorf("gym processor storage: %w", err)
	}
	j.bytes.Store(0)
	j.dropMarks()
	return j.deleteRange(ctx, old, j.next-1)
}
