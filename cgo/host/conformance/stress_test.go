package conformance

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestStress1000 sends 1,000 concurrent requests split over the sync, async and panicking paths,
// while ~50 clients send half a body and disconnect. Every completed request must be answered
// correctly, and the host must still serve afterwards.
func TestStress1000(t *testing.T) {
	e := newEnv(t)
	h := e.h
	const total = 1000
	const disconnectors = 50

	client := &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns:        total,
			MaxIdleConnsPerHost: total,
			DisableCompression:  true,
		},
	}
	defer client.CloseIdleConnections()

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()

	type kind int
	const (
		kSync kind = iota
		kAsync
		kAsyncSleep
		kPanicSync
		kPanicAsync
		kPanicData
		kLocalReply
	)
	kindOf := func(i int) kind {
		switch {
		case i%10 < 3:
			return kSync
		case i%10 < 6:
			return kAsync
		case i%10 == 6:
			return kAsyncSleep
		case i%10 == 7:
			return kPanicSync
		case i%10 == 8:
			if i%20 == 8 {
				return kPanicAsync
			}
			return kPanicData
		}
		return kLocalReply
	}

	var ok, transportErr, wrong, panics atomic.Int64
	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		wrong.Add(1)
		mu.Lock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, args...))
		}
		mu.Unlock()
	}

	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < total; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			k := kindOf(i)
			body := fmt.Sprintf("request-%d-%s", i, strings.Repeat("x", i%200))
			ctl := map[string]string{"x-test-dd-mode": "upper"}
			switch k {
			case kAsync:
				ctl["x-test-mode"] = "async"
			case kAsyncSleep:
				ctl["x-test-mode"] = "async"
				ctl["x-test-sleep-ms"] = "5"
				ctl["x-test-data-sleep-ms"] = "5"
			case kPanicSync:
				ctl["x-test-panic"] = "decode-header"
			case kPanicAsync:
				ctl["x-test-mode"] = "async"
				ctl["x-test-panic"] = "decode-header"
			case kPanicData:
				ctl["x-test-panic"] = "decode-data"
				if i%3 == 0 {
					ctl["x-test-mode"] = "async"
				}
			case kLocalReply:
				ctl["x-test-localreply"] = "decode-data"
				if i%2 == 0 {
					ctl["x-test-mode"] = "async"
				}
			}
			hr, _ := http.NewRequestWithContext(ctx, "POST", h.url("main", fmt.Sprintf("/echo/%d", i)), strings.NewReader(body))
			hr.Host = "test.com"
			for k, v := range ctl {
				hr.Header.Set(k, v)
			}
			res, err := client.Do(hr)
			if err != nil {
				transportErr.Add(1)
				fail("request %d (kind %d): %v", i, k, err)
				return
			}
			r := &resp{status: res.StatusCode, header: res.Header}
			var sb strings.Builder
			_, err = ioCopy(&sb, res)
			r.body = sb.String()
			if err != nil {
				transportErr.Add(1)
				fail("request %d (kind %d): body: %v", i, k, err)
				return
			}
			switch k {
			case kSync, kAsync, kAsyncSleep:
				if r.status != 200 {
					fail("request %d (kind %d): status %d body %q", i, k, r.status, r.body)
					return
				}
				rep, err := parseEcho(r.body)
				if err != nil || rep.Body != strings.ToUpper(body) || rep.URI != fmt.Sprintf("/echo/%d", i) {
					fail("request %d (kind %d): upstream saw %+v (err %v)", i, k, rep, err)
					return
				}
			case kPanicSync, kPanicAsync, kPanicData:
				if r.status != 500 || r.body != "error happened in filter\r\n" {
					fail("request %d (kind %d): got %d %q, want 500", i, k, r.status, r.body)
					return
				}
				panics.Add(1)
			case kLocalReply:
				if r.status != 403 || r.body != "forbidden from go in decode-data\r\n" {
					fail("request %d (kind %d): got %d %q, want 403", i, k, r.status, r.body)
					return
				}
			}
			ok.Add(1)
		}(i)
	}
	// clients that send half a body and go away
	var dwg sync.WaitGroup
	for i := 0; i < disconnectors; i++ {
		dwg.Add(1)
		go func(i int) {
			defer dwg.Done()
			<-start
			c, err := net.DialTimeout("tcp", h.addr("main"), 5*time.Second)
			if err != nil {
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			mode := "sync"
			if i%2 == 0 {
				mode = "async"
			}
			fmt.Fprintf(c, "POST /echo HTTP/1.1\r\nhost: test.com\r\ncontent-length: 1000\r\nx-test-mode: %s\r\nx-test-dd-mode: upper\r\n\r\n%s", mode, strings.Repeat("h", 500))
			time.Sleep(time.Duration(i%10) * time.Millisecond)
		}(i)
	}
	began := time.Now()
	close(start)
	wg.Wait()
	dwg.Wait()
	elapsed := time.Since(began)
	t.Logf("%d requests in %v: %d ok, %d transport errors, %d wrong answers", total, elapsed, ok.Load(), transportErr.Load(), wrong.Load()-transportErr.Load())
	for _, f := range failures {
		t.Error(f)
	}
	if ok.Load() != total {
		t.Errorf("%d of %d requests answered correctly", ok.Load(), total)
	}
	if elapsed > 50*time.Second {
		t.Errorf("took %v, bound is 50s", elapsed)
	}

	// still serving
	h.alive(t)
	r := h.must(t, req{listener: "main", method: "POST", path: "/echo", body: "final", headers: hdrs("x-test-dd-mode", "upper")})
	if r.status != 200 || decodeEcho(t, r).Body != "FINAL" {
		t.Fatalf("final request: %d %q", r.status, r.body)
	}
	if c := h.ready(t); c != 200 {
		t.Fatalf("/ready after the stress: %d", c)
	}
	st := h.stats(t)
	if p := st["http.main.golang.panic_error"]; p != panics.Load() {
		t.Errorf("http.main.golang.panic_error = %d, want %d (one per panicking request)", p, panics.Load())
	}
}
