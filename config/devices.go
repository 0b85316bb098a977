package config

import (
	"crypto/rand"

	"github.com/xiaozhi-hub/hub/mcpclient"
)

// WithInProcessToken returns the settings with, when device-tokens is
// empty, one device token that exists only in this process: in-process
// devices (--demo) present it, so they work under every device-auth policy
// (and over MQTT, whose logins need a token even under open).
func (c Config) WithInProcessToken() Config {
	if len(c.DeviceTokens) == 0 {
		c.DeviceTokens = []string{"in-process-" + rand.Text()}
	}
	return c
}

// Vision is the camera explain endpoint announced to devices in
// initialize (vision-url, vision-token); nil when vision-url is empty.
func (c Config) Vision() *mcpclient.Vision {
	if c.VisionURL == "" {
		return nil
	}
	return &mcpclient.Vision{URL: c.VisionURL, Token: c.VisionToken}
}
