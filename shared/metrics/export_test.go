package metrics

import "time"

// SetRuntimeSampleInterval changes the runtime sampler's interval for a test and returns the
// function restoring it.
func SetRuntimeSampleInterval(d time.Duration) (restore func()) {
	old := rtInterval.Swap(int64(d))
	return func() { rtInterval.Store(old) }
}

// RuntimeSamples is the number of samples taken so far.
func RuntimeSamples() uint64 { return rtSamples.Load() }

// RuntimeParked reports whether the sampler waits for activity.
func RuntimeParked() bool { return rtParked.Load() }
