package config

import (
	"errors"
	"fmt"
	"time"

	"github.com/xiaozhi-hub/hub/agent"
	"github.com/xiaozhi-hub/hub/internal/httpx"
	"github.com/xiaozhi-hub/hub/internal/memlimit"
	"github.com/xiaozhi-hub/hub/ota"
	"github.com/xiaozhi-hub/hub/services"
)

// Validate checks the settings and says what to fix.
func (c Config) Validate() error {
	var errs []error
	if c.Listen == "" {
		errs = append(errs, errors.New("listen: must be host:port, e.g. :8000 or 127.0.0.1:8000"))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("data-dir: must not be empty"))
	}
	errs = append(errs, c.validateCluster()...)
	if _, err := httpx.ParseProxies(c.TrustedProxies); err != nil {
		errs = append(errs, err)
	}
	if c.MCPOAuth != "on" && c.MCPOAuth != "off" {
		errs = append(errs, fmt.Errorf("mcp-oauth: %q is not on or off", c.MCPOAuth))
	}
	switch c.DeviceAuth {
	case ota.PolicyOpen, ota.PolicyToken, ota.PolicyActivation:
	default:
		errs = append(errs, fmt.Errorf("device-auth: %q is not one of activation, token, open", c.DeviceAuth))
	}
	if c.PublicURL != "" {
		if _, err := ota.ParsePublicURL(c.PublicURL); err != nil {
			errs = append(errs, err)
		}
	}
	if c.WSProtocolVersion < 1 || c.WSProtocolVersion > 3 {
		errs = append(errs, fmt.Errorf("ws-protocol-version: %d is not 1, 2 or 3", c.WSProtocolVersion))
	}
	if c.ActivationExpiry < 30*time.Second {
		errs = append(errs, fmt.Errorf("activation-expiry: %v is shorter than 30s (devices check back about every 30 s)", c.ActivationExpiry))
	}
	if c.OTAChecksPerMinute < 1 || c.OTAChecksPerMinute > 60000 {
		errs = append(errs, fmt.Errorf("ota-checks-per-minute: %d is outside 1..60000", c.OTAChecksPerMinute))
	}
	if c.OTABurst < 1 || c.OTABurst > 10000 {
		errs = append(errs, fmt.Errorf("ota-burst: %d is outside 1..10000", c.OTABurst))
	}
	if c.ActivationCodesPerAddress < 1 || c.ActivationCodesPerAddress > ota.MaxPendingCodes {
		errs = append(errs, fmt.Errorf("activation-codes-per-address: %d is outside 1..%d (the codes waiting at once on a hub)", c.ActivationCodesPerAddress, ota.MaxPendingCodes))
	}
	if c.NewDevicesPerAddress < 1 || c.NewDevicesPerAddress > 100000 {
		errs = append(errs, fmt.Errorf("new-devices-per-address: %d is outside 1..100000", c.NewDevicesPerAddress))
	}
	if c.MaxUnusedDevices < 1 || c.MaxUnusedDevices > 1000000 {
		errs = append(errs, fmt.Errorf("max-unused-devices: %d is outside 1..1000000", c.MaxUnusedDevices))
	}
	if c.CallTimeout <= 0 || c.MaxCallTimeout < c.CallTimeout {
		errs = append(errs, fmt.Errorf("call-timeout (%v) must be positive and at most max-call-timeout (%v)", c.CallTimeout, c.MaxCallTimeout))
	}
	if c.Demo < 0 || c.Demo > 1000 {
		errs = append(errs, fmt.Errorf("demo: %d devices is outside 0..1000", c.Demo))
	}
	errs = append(errs, c.validateLimits()...)
	errs = append(errs, c.validateMQTT()...)
	errs = append(errs, c.validateVoice()...)
	if c.ConversationTimeout < time.Second {
		errs = append(errs, fmt.Errorf("conversation-timeout: %v is shorter than 1s", c.ConversationTimeout))
	}
	if _, _, err := memlimit.Parse(c.MemoryLimit); err != nil {
		errs = append(errs, err)
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		errs = append(errs, fmt.Errorf("log-format: %q is not text or json", c.LogFormat))
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log-level: %q is not one of debug, info, warn, error", c.LogLevel))
	}
	switch c.AgentProvider {
	case "", agent.ProviderAnthropic, agent.ProviderOpenAI:
	default:
		errs = append(errs, fmt.Errorf("agent-provider: %q is not one of %s, %s (from the flag, the config file or XZ_AGENT_PROVIDER)", c.AgentProvider, agent.ProviderAnthropic, agent.ProviderOpenAI))
	}
	if err := services.CheckServers(c.MCPServers); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
