package redisclient

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/moeproxy/moe/shared/log"
)

// go-redis logs pool events (failed dials while Redis is down) with its own
// logger straight to the process's stderr, around Envoy's log. Its logger is
// process-wide by design, so it is set once here, for every plugin using
// go-redis: lines go to Envoy's log at warn level, tagged go-redis.
func init() { redis.SetLogger(envoyLogger{}) }

type envoyLogger struct{}

func (envoyLogger) Printf(_ context.Context, format string, args ...any) {
	// go-redis logs from its pool goroutines: without an Envoy to log to (a
	// tool such as moectl, a unit test) the line is dropped, never a panic.
	defer func() { _ = recover() }()
	log.Warnf("go-redis: %s", fmt.Sprintf(format, args...))
}
