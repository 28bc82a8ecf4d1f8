package logsink

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type count struct{ n atomic.Int64 }

func (c *count) Inc(d uint64) { c.n.Add(int64(d)) }

func line(s string) Line { l := GetLine(); *l = append(*l, s...); return l }

func TestQueueWritesInBatchesAndFlushesOnClose(t *testing.T) {
	var mu sync.Mutex
	var got strings.Builder
	var written, dropped count
	q := NewQueue(QueueOptions{Size: 1000, Written: &written, Dropped: &dropped, Write: func(b []byte, n int) error {
		mu.Lock()
		defer mu.Unlock()
		got.Write(b)
		return nil
	}})
	for i := 0; i < 500; i++ {
		if !q.Push(line("x\n")) {
			t.Fatal("push refused")
		}
	}
	if !q.Close(5 * time.Second) {
		t.Fatal("close timed out")
	}
	if got.Len() != 1000 || written.n.Load() != 500 || dropped.n.Load() != 0 {
		t.Fatalf("wrote %d bytes, written %d dropped %d", got.Len(), written.n.Load(), dropped.n.Load())
	}
	if q.Push(line("late\n")) || dropped.n.Load() != 1 {
		t.Fatalf("push after close: dropped %d", dropped.n.Load())
	}
}

func TestFullQueueDropsWithoutBlocking(t *testing.T) {
	release := make(chan struct{})
	var dropped, written count
	q := NewQueue(QueueOptions{Size: 4, Dropped: &dropped, Written: &written, Write: func([]byte, int) error {
		<-release // a sink that hangs
		return nil
	}})
	start := time.Now()
	for i := 0; i < 100; i++ {
		q.Push(line("x\n"))
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("pushes took %v", d)
	}
	// One line may be in the hung write, four queued: the rest dropped.
	if n := dropped.n.Load(); n < 95 || n > 96 {
		t.Fatalf("dropped %d of 100", n)
	}
	if q.Close(50 * time.Millisecond) {
		t.Fatal("close reported a flush while the sink hangs")
	}
	close(release)
	if !q.Close(5 * time.Second) {
		t.Fatal("close timed out after the sink recovered")
	}
	if written.n.Load()+dropped.n.Load() != 100 {
		t.Fatalf("written %d + dropped %d != 100", written.n.Load(), dropped.n.Load())
	}
}

func TestFailedWritesAreCountedAndReportedRarely(t *testing.T) {
	var failed count
	var reports atomic.Int64
	q := NewQueue(QueueOptions{Size: 100, Failed: &failed, ErrorEvery: time.Hour,
		Write:   func([]byte, int) error { return errors.New("disk full") },
		OnError: func(error, int) { reports.Add(1) }})
	for i := 0; i < 20; i++ {
		q.Push(line("x\n"))
		time.Sleep(time.Millisecond)
	}
	q.Close(5 * time.Second)
	if failed.n.Load() != 20 || reports.Load() != 1 {
		t.Fatalf("failed %d, reports %d", failed.n.Load(), reports.Load())
	}
}

func TestLingerCollectsABatch(t *testing.T) {
	var batches atomic.Int64
	var lines atomic.Int64
	q := NewQueue(QueueOptions{Size: 100, Linger: 100 * time.Millisecond, MaxBatchLines: 10, Write: func(_ []byte, n int) error {
		batches.Add(1)
		lines.Add(int64(n))
		return nil
	}})
	for i := 0; i < 25; i++ {
		q.Push(line("x\n"))
	}
	q.Close(5 * time.Second)
	if lines.Load() != 25 || batches.Load() != 3 {
		t.Fatalf("%d lines in %d batches, want 25 in 3", lines.Load(), batches.Load())
	}
}

func TestFileOutputIsSharedRotatedAndClosedByTheLastHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "access.log")
	a, err := Acquire(path, Rotation{MaxSizeMB: 1, MaxBackups: 2})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Acquire(path, Rotation{MaxSizeMB: 1, MaxBackups: 2})
	if err != nil || a != b {
		t.Fatalf("second acquire: %v, same %v", err, a == b)
	}
	chunk := []byte(strings.Repeat("y", 1023) + "\n")
	for i := 0; i < 1100; i++ { // 1.1 MB: one rotation
		if _, err := a.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 2 {
		t.Fatalf("files after 1.1 MB with max_size_mb 1: %v", entries)
	}
	a.Release()
	if _, err := b.Write([]byte("still open\n")); err != nil {
		t.Fatalf("write after the other holder released: %v", err)
	}
	b.Release()
	if n := openOutputs(); n != 0 {
		t.Fatalf("%d outputs still open", n)
	}
}

func TestAcquireRefusesAFileThatCannotBeOpened(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o644)
	if _, err := Acquire(filepath.Join(blocker, "x.log"), DefaultRotation); err == nil {
		t.Fatal("acquire under a regular file succeeded")
	}
}

func TestValidatePath(t *testing.T) {
	for _, tc := range []struct {
		path string
		ok   bool
	}{{"stdout", true}, {"stderr", true}, {"/var/log/a.log", true}, {"", false}, {"rel/a.log", false}, {"/var/log/", false}} {
		if err := ValidatePath("path", tc.path); (err == nil) != tc.ok {
			t.Errorf("%q: %v", tc.path, err)
		}
	}
}

func TestJSONAndControlEscaping(t *testing.T) {
	for in, want := range map[string]string{
		"plain":        `"plain"`,
		"a\"b\\c":      `"a\"b\\c"`,
		"l1\nl2\t\x01": `"l1\nl2\t\u0001"`,
		"bad\xffutf8":  `"bad\ufffdutf8"`,
		"héllo":        `"héllo"`,
	} {
		if got := string(AppendJSONString(nil, in)); got != want {
			t.Errorf("AppendJSONString(%q) = %s, want %s", in, got, want)
		}
	}
	if got := string(EscapeControl([]byte("a\nb\x7f"), 0)); got != `a\x0ab\x7f` {
		t.Errorf("EscapeControl = %q", got)
	}
}
