package auditlog

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Record is a decoded audit record.
type Record struct {
	Time      string            `json:"time"`
	RequestID string            `json:"request_id"`
	WhoRaw    map[string]string `json:"who"`
	What      map[string]string `json:"what"`
	Decision  map[string]any    `json:"decision"`
	Decisions []map[string]any  `json:"decisions"`
	Status    int               `json:"status"`
	Details   string            `json:"details"`
	LatencyMS float64           `json:"latency_ms"`
	Headers   map[string]string `json:"headers"`
	Fields    map[string]string `json:"fields"`
}

func decode(t testing.TB, line string) Record {
	t.Helper()
	var r Record
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("record %q: %v", line, err)
	}
	return r
}

// fileConfig is a config writing to a fresh file; it returns the config
// JSON and the file.
func fileConfig(t testing.TB, extra string) (string, string) {
	path := filepath.Join(t.TempDir(), "audit.log")
	cfg := fmt.Sprintf(`{"sink": {"type": "file", "path": %q}`, path)
	if extra != "" {
		cfg += ", " + extra
	}
	return cfg + "}", path
}

func readLines(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
