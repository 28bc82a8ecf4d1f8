package directresponse

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/moeproxy/moe/shared/api"
	"github.com/moeproxy/moe/shared/match"
)

// compiled is what Init builds: each rule's answer ready to send (status,
// headers, body with the file's content), and the metrics.
type compiled struct {
	answers []answer

	responses api.Counter
}

type answer struct {
	match   *match.Match
	status  int
	headers api.Headers
	body    string
}

// Init runs once per config version, after Validate, when Envoy loads the
// config (its main thread, not a worker): the body files are read here,
// never per request.
func (c *Config) Init(env api.ConfigEnv) error {
	c.answers = make([]answer, len(c.Rules))
	for i, r := range c.Rules {
		a := answer{match: r.Match, status: r.Status, body: r.Body, headers: api.Headers{}}
		if a.status == 0 {
			a.status = 200
		}
		for k, v := range r.Headers {
			a.headers[strings.ToLower(k)] = []string{v}
		}
		if r.BodyFile != "" {
			b, err := readBody(r.BodyFile)
			if err != nil {
				return api.FieldErrorf(api.Field("rules", i, "body_file"), "%v", err)
			}
			a.body = b
		}
		c.answers[i] = a
		if i < len(c.Rules)-1 && r.Match.IsEmpty() {
			env.Log().Warnf("rules[%d] matches every request: the rules after it never answer", i)
		}
	}
	c.responses = env.Metrics().Counter("responses")
	return nil
}

// readBody reads a body file of at most maxBody bytes.
func readBody(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxBody+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxBody {
		return "", fmt.Errorf("%s is larger than %d bytes", path, maxBody)
	}
	return string(b), nil
}
