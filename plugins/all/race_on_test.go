//go:build race

package all_test

// raceEnabled: the race detector's runtime allocates differently (TestStandardChainAllocations).
const raceEnabled = true
