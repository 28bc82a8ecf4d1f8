package payloadlimit

import "github.com/moeproxy/moe/shared/api"

// compiled is what Init builds: the limits as int64, the reply headers and
// the metrics.
type compiled struct {
	maxReq, maxResp int64
	replyHeaders    api.Headers

	reqTooLarge, reqTooLargeStreamed   api.Counter
	respTooLarge, respTooLargeStreamed api.Counter
}

// Init runs once per config version, after Validate.
func (c *Config) Init(env api.ConfigEnv) error {
	c.maxReq, c.maxResp = int64(c.MaxRequestBody), int64(c.MaxResponseBody)
	c.replyHeaders = api.Headers{"content-type": {"text/plain"}}
	m := env.Metrics()
	c.reqTooLarge = m.Counter("request_too_large")
	c.reqTooLargeStreamed = m.Counter("request_too_large_streamed")
	c.respTooLarge = m.Counter("response_too_large")
	c.respTooLargeStreamed = m.Counter("response_too_large_streamed")
	return nil
}
