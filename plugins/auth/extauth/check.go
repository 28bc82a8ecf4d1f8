package extauth

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/consumer"
)

// result is the service's answer, immutable once built: a cached one is shared
// by concurrent requests.
type result struct {
	allow bool
	// allow: values of rt.upstream by index; ok[i] false = absent.
	upVals []string
	upOK   []bool
	// consumer named by consumer_from_header (allow only).
	consumer *api.Consumer
	// deny: what the client gets.
	status  int
	headers api.Headers
	body    string
}

// excludedClientHeaders are never relayed from a denial: they describe the
// connection to the service, not the reply.
var excludedClientHeaders = map[string]bool{
	"connection": true, "keep-alive": true, "proxy-connection": true, "transfer-encoding": true,
	"te": true, "trailer": true, "upgrade": true, "content-length": true, "host": true,
}

// check asks the service. It blocks (the phase runs in a goroutine); ctx ends
// when the client goes away, and the timeout bounds the whole exchange.
func (rt *runtime) check(ctx context.Context, h api.RequestHeaderMap, body api.Buffer) (*result, error) {
	ctx, cancel := context.WithTimeout(ctx, rt.timeout)
	defer cancel()

	path, query, _ := strings.Cut(h.Path(), "?")
	target := rt.basePath + path
	if strings.HasPrefix(target, "//") {
		// An opaque URL starting with "//" would be read as a host.
		target = "/" + strings.TrimLeft(target, "/")
	}
	req := &http.Request{
		Method:     h.Method(),
		URL:        &url.URL{Scheme: rt.scheme, Host: rt.host, Opaque: target, RawQuery: query},
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     make(http.Header, len(rt.allowed)+len(rt.toAdd)+5),
		Host:       rt.host,
	}
	req = req.WithContext(ctx)
	for _, name := range rt.allowed {
		if vs := h.Values(name); len(vs) > 0 {
			req.Header[name] = vs // read only; lower-case names are sent as is
		}
	}
	req.Header["x-forwarded-method"] = []string{h.Method()}
	req.Header["x-forwarded-uri"] = []string{h.Path()}
	req.Header["x-forwarded-host"] = []string{h.Host()}
	if s := h.Scheme(); s != "" {
		req.Header["x-forwarded-proto"] = []string{s}
	}
	for _, kv := range rt.toAdd {
		req.Header[kv[0]] = []string{kv[1]}
	}
	if rt.body != nil && body != nil && body.Len() > 0 {
		b := body.Bytes()
		if len(b) > rt.body.MaxRequestBytes {
			b = b[:rt.body.MaxRequestBytes]
			req.Header["x-envoy-auth-partial-body"] = []string{"true"}
		}
		// A copy: the transport may still read the body after a timeout, when
		// the buffer belongs to Envoy again.
		b = bytes.Clone(b)
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.ContentLength = int64(len(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}

	resp, err := rt.client.Do(req)
	if err != nil {
		// A *url.Error spells out the check request's URL, i.e. the client's
		// :path and query, which can hold credentials (?access_token=...):
		// keep only the network reason; fail logs the service's own URL.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, err
	}
	defer resp.Body.Close()
	res := &result{}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		res.allow = true
		if len(rt.upstream) > 0 {
			res.upVals = make([]string, len(rt.upstream))
			res.upOK = make([]bool, len(rt.upstream))
			for i, name := range rt.upstream {
				if vs := resp.Header.Values(name); len(vs) > 0 && consumer.SafeHeaderValue(vs[0]) {
					res.upVals[i], res.upOK[i] = vs[0], true
				}
			}
		}
		if rt.consumerFrom != "" {
			if v := resp.Header.Get(rt.consumerFrom); v != "" && consumer.SafeHeaderValue(v) {
				res.consumer = &api.Consumer{Name: v}
			}
		}
		// Drain (bounded) so the connection can be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return res, nil
	}
	res.status = resp.StatusCode
	b, err := io.ReadAll(io.LimitReader(resp.Body, rt.maxRespBody))
	if err != nil {
		return nil, err
	}
	res.body = string(b)
	res.headers = api.Headers{}
	for k, vs := range resp.Header {
		lk := strings.ToLower(k)
		if rt.client403 != nil && !rt.client403[lk] || rt.client403 == nil && excludedClientHeaders[lk] {
			continue
		}
		res.headers[lk] = vs
	}
	return res, nil
}
