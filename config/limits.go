package config

import (
	"fmt"
	"time"
)

// validateLimits checks the settings that bound what HTTP clients may hold
// open: idle keep-alive connections, /mcp sessions and event streams.
func (c Config) validateLimits() []error {
	var errs []error
	if c.HTTPIdleTimeout < time.Second {
		errs = append(errs, fmt.Errorf("http-idle-timeout: %v is shorter than 1s", c.HTTPIdleTimeout))
	}
	if c.MCPMaxSessions < 1 {
		errs = append(errs, fmt.Errorf("mcp-max-sessions: %d must be at least 1", c.MCPMaxSessions))
	}
	if c.MCPSessionTimeout < time.Second {
		errs = append(errs, fmt.Errorf("mcp-session-timeout: %v is shorter than 1s", c.MCPSessionTimeout))
	}
	if c.SSEMaxStreams < 1 {
		errs = append(errs, fmt.Errorf("sse-max-streams: %d must be at least 1", c.SSEMaxStreams))
	}
	if c.SSEWriteTimeout < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("sse-write-timeout: %v is shorter than 100ms", c.SSEWriteTimeout))
	}
	return errs
}
