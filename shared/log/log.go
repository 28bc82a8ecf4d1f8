// Package log writes framework and plugin log lines through Envoy's logger
// (envoyGoFilterLog), tagged "[moe][<plugin>][<request id>]". Formatting is
// skipped when Envoy's log level would drop the line (the level is cached in Go
// by the SDK, so the check costs no cgo call).
package log

import (
	"fmt"

	envoy "github.com/envoyproxy/envoy/contrib/golang/common/go/api"
)

// Enabled reports whether Envoy logs at level.
func Enabled(level envoy.LogType) bool { return envoy.GetLogLevel() <= level }

// Printf logs one line tagged with plugin and request id (either may be empty).
func Printf(level envoy.LogType, plugin, requestID, format string, args ...any) {
	if !Enabled(level) {
		return
	}
	msg := fmt.Sprintf(format, args...)
	switch {
	case plugin != "" && requestID != "":
		msg = "[moe][" + plugin + "][" + requestID + "] " + msg
	case plugin != "":
		msg = "[moe][" + plugin + "] " + msg
	default:
		msg = "[moe] " + msg
	}
	switch level {
	case envoy.Trace:
		envoy.LogTrace(msg)
	case envoy.Debug:
		envoy.LogDebug(msg)
	case envoy.Info:
		envoy.LogInfo(msg)
	case envoy.Warn:
		envoy.LogWarn(msg)
	case envoy.Error:
		envoy.LogError(msg)
	default:
		envoy.LogCritical(msg)
	}
}

// Framework-level helpers.
func Debugf(format string, args ...any) { Printf(envoy.Debug, "", "", format, args...) }
func Infof(format string, args ...any)  { Printf(envoy.Info, "", "", format, args...) }
func Warnf(format string, args ...any)  { Printf(envoy.Warn, "", "", format, args...) }
func Errorf(format string, args ...any) { Printf(envoy.Error, "", "", format, args...) }

// Plugin is an api.Logger for code that has a plugin name but no request
// (config parsing, background goroutines).
type Plugin string

func (p Plugin) Debugf(format string, args ...any) {
	Printf(envoy.Debug, string(p), "", format, args...)
}
func (p Plugin) Infof(format string, args ...any) { Printf(envoy.Info, string(p), "", format, args...) }
func (p Plugin) Warnf(format string, args ...any) { Printf(envoy.Warn, string(p), "", format, args...) }
func (p Plugin) Errorf(format string, args ...any) {
	Printf(envoy.Error, string(p), "", format, args...)
}
