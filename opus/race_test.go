//go:build race

package opus

// raceEnabled: the race detector drops sync.Pool items at random.
const raceEnabled = true
