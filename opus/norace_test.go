//go:build !race

package opus

const raceEnabled = false
