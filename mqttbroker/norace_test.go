//go:build !race

package mqttbroker

const raceEnabled = false
