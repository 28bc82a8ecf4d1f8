package auditlog

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// httpSink POSTs batches of records (NDJSON) to a collector.
type httpSink struct {
	url     string
	name    string // the URL without credentials, for logs
	headers http.Header
	timeout time.Duration
	client  *http.Client
	ctx     context.Context
	cancel  context.CancelFunc
}

func newHTTPSink(s *Sink) *httpSink {
	u, _ := url.Parse(s.URL) // validated
	h := http.Header{}
	for k, v := range s.Headers {
		h.Set(k, v)
	}
	h.Set("content-type", "application/x-ndjson")
	ctx, cancel := context.WithCancel(context.Background())
	t := s.Timeout.D()
	return &httpSink{
		url: s.URL, name: u.Redacted(), headers: h, timeout: t, ctx: ctx, cancel: cancel,
		client: &http.Client{
			Transport: &http.Transport{
				Proxy:                 nil, // the collector is reached directly
				DialContext:           (&net.Dialer{Timeout: t, KeepAlive: 30 * time.Second}).DialContext,
				MaxIdleConnsPerHost:   2,
				IdleConnTimeout:       60 * time.Second,
				TLSHandshakeTimeout:   t,
				ResponseHeaderTimeout: t,
			},
			Timeout:       t,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// post sends one batch; it runs on the queue's goroutine.
func (s *httpSink) post(batch []byte, _ int) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(batch))
	if err != nil {
		return err
	}
	req.Header = s.headers.Clone()
	resp, err := s.client.Do(req)
	if err != nil {
		// The error names the URL as given; report the redacted one.
		if ue, ok := err.(*url.Error); ok {
			err = ue.Err
		}
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("collector answered %d", resp.StatusCode)
	}
	return nil
}

// close stops a POST in flight (after the flush timeout) and the idle
// connections.
func (s *httpSink) close() {
	s.cancel()
	s.client.CloseIdleConnections()
}
