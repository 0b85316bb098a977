//go:build race

package mqttbroker

// raceEnabled: the race detector's instrumentation makes stack frames larger.
const raceEnabled = true
