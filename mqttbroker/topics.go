package mqttbroker

import (
	"strings"

	hub "github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/protocol"
)

// The device topics (protocol.UplinkTopic and protocol.DownlinkTopic): a
// device publishes to its uplink topic only and receives on its downlink
// topic (Broker.Publish writes there).
var (
	UplinkTopic   = protocol.UplinkTopic
	DownlinkTopic = protocol.DownlinkTopic
)

// checkTopicSafe keeps a device id usable as an MQTT topic level: no
// separators or wildcards, nothing outside the hub's device-id alphabet.
func checkTopicSafe(deviceID string) error {
	if deviceID == "" || len(deviceID) > 64 {
		return hub.Errorf(hub.EINVALID, "device id %q must be 1 to 64 characters for MQTT", deviceID)
	}
	for _, c := range deviceID {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(":._-", c)) {
			return hub.Errorf(hub.EINVALID, "device id %q may contain only letters, digits and : . _ - for MQTT", deviceID)
		}
	}
	return nil
}
