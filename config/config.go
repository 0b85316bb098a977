// Package config is the hub's settings: the Config struct (each field's
// key and help text in its tags), the defaults, their loading from a file,
// the environment and flags (Load, Print for --help), their validation in
// the words of the settings, and what they resolve to for the packages
// that use them (the MQTT addresses, the speech providers' settings, the
// cluster node's name). It starts nothing and opens nothing; server.Open
// assembles the hub from a Config.
package config

import (
	"time"

	"github.com/xiaozhi-hub/hub/opus"
	"github.com/xiaozhi-hub/hub/ota"
	"github.com/xiaozhi-hub/hub/services"
)

// Config is every setting of the hub. Each field can be set, lowest
// precedence first, by its default, the YAML config file (key = the yaml
// tag), an environment variable (XZ_HUB_ + the key in upper case with "-" as
// "_") and a command-line flag (--key).
type Config struct {
	Listen     string `yaml:"listen" help:"address to listen on (host:port); devices, API and metrics share it"`
	DataDir    string `yaml:"data-dir" help:"directory for the SQLite database and the API token file"`
	APIToken   string `yaml:"api-token" help:"admin API token; default: generated on first start and kept in <data-dir>/api-token"`
	DeviceAuth string `yaml:"device-auth" help:"who may connect as a device: activation (a person approves each new device's code), token (a token from the OTA endpoint or device-tokens) or open (anyone)"`
	// DeviceTokens are accepted from any device with device-auth token or activation.
	DeviceTokens []string `yaml:"device-tokens" help:"comma-separated device tokens accepted from any device with device-auth token or activation"`
	Demo         int      `yaml:"demo" help:"start this many simulated devices in-process (0: none; --demo alone: 4)"`
	LogLevel     string   `yaml:"log-level" help:"debug, info, warn or error"`
	LogFormat    string   `yaml:"log-format" help:"text or json"`

	CallTimeout    time.Duration `yaml:"call-timeout" help:"default time a device has to answer a tool call"`
	MaxCallTimeout time.Duration `yaml:"max-call-timeout" help:"longest timeout a caller may ask for (the firmware allows 300 s)"`
	MaxCalls       int           `yaml:"max-calls" help:"call records kept in the history"`
	VisionURL      string        `yaml:"vision-url" help:"camera explain endpoint announced to devices in initialize"`
	VisionToken    string        `yaml:"vision-token" help:"token for the vision endpoint"`
	DeviceOrigins  []string      `yaml:"device-origins" help:"extra browser origins allowed on the device endpoint (comma-separated host patterns)"`

	// The OTA check and activation of real devices (package ota). PublicURL
	// is the hub's base URL as devices reach it: the OTA answer builds the
	// WebSocket and firmware URLs from it.
	PublicURL         string        `yaml:"public-url" help:"the hub's base URL as devices reach it, e.g. http://192.168.1.10:8000 (default: the Host of each OTA request)"`
	WSProtocolVersion int           `yaml:"ws-protocol-version" help:"binary audio protocol version (1, 2 or 3) the OTA endpoint tells devices to use"`
	ActivationExpiry  time.Duration `yaml:"activation-expiry" help:"how long an activation code shown by a device can be approved"`
	FirmwareDir       string        `yaml:"firmware-dir" help:"firmware images offered to devices, laid out as <board>/<version>.bin (default: none)"`
	// Per source address (after trusted-proxies): many devices behind one
	// NAT share these.
	OTAChecksPerMinute        int `yaml:"ota-checks-per-minute" help:"OTA checks and activation polls one address may make per minute, after a burst of ota-burst; more get 429 (devices behind one NAT share it)"`
	OTABurst                  int `yaml:"ota-burst" help:"OTA checks and activation polls one address may make at once before ota-checks-per-minute applies"`
	ActivationCodesPerAddress int `yaml:"activation-codes-per-address" help:"activation codes waiting for approval at once for the devices at one address"`
	NewDevicesPerAddress      int `yaml:"new-devices-per-address" help:"devices new to the hub that one address may bring in an hour (all at once at most) under device-auth token or open: each gets a token from the OTA check; more get 429 (token) or no token (open). Devices the hub knows are never counted"`
	MaxUnusedDevices          int `yaml:"max-unused-devices" help:"devices kept that never did anything useful (offline, no tools, IoT things or history, nothing set by a person, not approved); beyond it the one seen longest ago is forgotten, and any after 24 h unseen"`

	// The MQTT+UDP transport (resolved in mqtt.go): devices stay connected while idle.
	MQTTListen  string `yaml:"mqtt-listen" help:"address of the embedded MQTT broker for devices on MQTT+UDP, e.g. :1883 (empty: off); with it set, the OTA endpoint offers MQTT to every device not kept on WebSocket"`
	UDPListen   string `yaml:"udp-listen" help:"address of the UDP audio server for MQTT devices (default: mqtt-listen's host and port, over UDP)"`
	MQTTPublic  string `yaml:"mqtt-public" help:"the broker's host:port as devices dial it, an IPv4 address or DNS name (default: the host of public-url or of the OTA request, with mqtt-listen's port); port 8883 means TLS"`
	UDPPublic   string `yaml:"udp-public" help:"the UDP audio server's host:port as devices reach it (default: the address the device's MQTT connection reached, with udp-listen's port)"`
	MQTTTLSCert string `yaml:"mqtt-tls-cert" help:"PEM certificate chain for MQTT over TLS; devices use TLS exactly on port 8883 and check it against the ESP-IDF CA bundle, so it must come from a public CA"`
	MQTTTLSKey  string `yaml:"mqtt-tls-key" help:"PEM private key of mqtt-tls-cert"`
	// Connections to the embedded broker that have not logged in yet.
	MQTTMaxPending        int `yaml:"mqtt-max-pending" help:"most connections to the embedded broker that have not logged in yet (TCP or TLS open, CONNECT not accepted); more are closed at once"`
	MQTTPendingPerAddress int `yaml:"mqtt-pending-per-address" help:"most connections not logged in yet from one address (an IPv6 /64), so that one address cannot keep devices elsewhere out; raise it when many devices reach the broker through one NAT or TCP proxy"`
	// An external broker (EMQX) instead of the embedded one (docs/emqx.md).
	MQTTBroker       string `yaml:"mqtt-broker" help:"an external MQTT 5 broker (EMQX) the hub connects to instead of running its own, e.g. mqtt://hub:password@emqx:1883 (needs mqtt-public, udp-public, mqtt-broker-secret; see docs/emqx.md)"`
	MQTTBrokerSecret string `yaml:"mqtt-broker-secret" help:"the secret the external broker sends (Authorization: Bearer) when it asks the hub, at POST /mqtt/auth, to check a device's login"`

	// UDPSessionsPerAddress bounds the conversations of the MQTT devices at
	// one address (udpaudio.Config.MaxSessionsPerAddr).
	UDPSessionsPerAddress int `yaml:"udp-sessions-per-address" help:"UDP audio channels (conversations) open at once for the MQTT devices at one address; a new one over it ends that address's least active one (raise it for many devices talking at once behind one NAT, or when MQTT reaches the hub through a proxy)"`

	// Spoken conversations (package voice): speech recognition and
	// synthesis providers.
	ASRProvider         string        `yaml:"asr-provider" help:"speech recognition: openai (any OpenAI-compatible /audio/transcriptions: OpenAI, Groq, SiliconFlow, speaches, LocalAI, whisper.cpp); empty: none"`
	ASRBaseURL          string        `yaml:"asr-base-url" help:"speech recognition API base URL, e.g. http://localhost:8000/v1 (default: https://api.openai.com/v1)"`
	ASRAPIKey           string        `yaml:"asr-api-key" help:"speech recognition API key (default with asr-provider openai: OPENAI_API_KEY)"`
	ASRModel            string        `yaml:"asr-model" help:"speech recognition model (default whisper-1)"`
	ASRAudio            string        `yaml:"asr-audio" help:"what asr-provider openai uploads: wav (default: every OpenAI-compatible server takes it) or ogg-opus (the device's own Opus in an Ogg file, not decoded in push-to-talk: OpenAI, Groq, speaches, LocalAI; whisper.cpp's server only when built with ffmpeg)"`
	ASRLanguage         string        `yaml:"asr-language" help:"language spoken to devices, e.g. zh or en: given to recognition (empty: the model decides) and the language of what the hub itself says to a device that reports none"`
	TTSProvider         string        `yaml:"tts-provider" help:"speech synthesis: openai (any OpenAI-compatible /audio/speech with PCM output: OpenAI, Kokoro-FastAPI, speaches, LocalAI, SiliconFlow); empty: none"`
	TTSBaseURL          string        `yaml:"tts-base-url" help:"speech synthesis API base URL (default: https://api.openai.com/v1)"`
	TTSAPIKey           string        `yaml:"tts-api-key" help:"speech synthesis API key (default with tts-provider openai: OPENAI_API_KEY)"`
	TTSModel            string        `yaml:"tts-model" help:"speech synthesis model (default tts-1)"`
	TTSVoice            string        `yaml:"tts-voice" help:"speech synthesis voice (default alloy)"`
	TTSSampleRate       int           `yaml:"tts-sample-rate" help:"sample rate of the PCM the synthesis server sends (OpenAI: 24000)"`
	OpusComplexity      int           `yaml:"opus-complexity" help:"CPU the hub spends encoding each 60 ms of an answer, 0..10: 4 with 48000 bits per second sounds better than 5 with 32000 for about 30% less"`
	OpusBitrate         int           `yaml:"opus-bitrate" help:"bits per second of the answers' audio, 6000..510000, variable around it: 48000 pays in bytes for the CPU complexity 4 saves (32000 at complexity 5 where bytes cost more)"`
	ConversationTimeout time.Duration `yaml:"conversation-timeout" help:"end a conversation in which nobody spoke for this long: over WebSocket the connection closes, over MQTT the device gets a goodbye (the firmware's own limit is 120s)"`

	// The built-in agent (POST /api/agent/chat, xiaozhi-hub chat). In the
	// config file they can also be written as an agent: section (provider,
	// model, api-key, base-url). Load fills the ones left empty from
	// ANTHROPIC_API_KEY / OPENAI_API_KEY and friends (agent.Config.FromEnv);
	// server.Open reads no environment.
	AgentProvider  string `yaml:"agent-provider" help:"LLM provider: anthropic or openai (any OpenAI-compatible API); default: whichever API key is set (env XZ_AGENT_PROVIDER also works)"`
	AgentModel     string `yaml:"agent-model" help:"LLM model name (env XZ_AGENT_MODEL also works)"`
	AgentAPIKey    string `yaml:"agent-api-key" help:"LLM API key (default: ANTHROPIC_API_KEY or OPENAI_API_KEY)"`
	AgentBaseURL   string `yaml:"agent-base-url" help:"LLM API base URL, e.g. http://localhost:11434/v1 for Ollama (default: ANTHROPIC_BASE_URL or OPENAI_BASE_URL)"`
	AgentAuthToken string `yaml:"agent-auth-token" help:"bearer token for an Anthropic-compatible API, used when there is no API key (default: ANTHROPIC_AUTH_TOKEN)"`
	// MCPDirectLimit is the number of online devices up to which /mcp
	// offers every device tool directly; above it, the four search-and-call tools.
	MCPDirectLimit int `yaml:"mcp-direct-limit" help:"online devices up to which /mcp lists device tools directly (above: search_devices, get_device, call_device_tool, send_iot_commands)"`
	// MCPOAuth turns the hub's OAuth authorization server for /mcp on or off (package oauth).
	MCPOAuth string `yaml:"mcp-oauth" help:"on: MCP clients (Claude, ChatGPT, MCP Inspector) may register and ask for access to /mcp through OAuth, and a person approves each in the dashboard; off: /mcp takes the admin token only"`

	// MCPServers are the outside MCP servers the hub connects to (package
	// services; checked by services.CheckServers). Only in the config file.
	MCPServers []services.ServerConfig `yaml:"mcp-servers" help:"in the config file only: MCP servers whose tools the hub offers beside the devices', a list of {name, url, headers} (Streamable HTTP, e.g. Home Assistant's http://<ha>:8123/api/mcp with headers {Authorization: Bearer <token>}) or {name, command, args} (stdio)"`

	// Several hub nodes acting as one (package cluster; resolved in cluster.go).
	ClusterNATS       string   `yaml:"cluster-nats" help:"run as one node of a cluster: embedded (a NATS node in this process, joined to cluster-peers) or the URLs of a NATS cluster, e.g. nats://nats-1:4222,nats://nats-2:4222 (empty: a hub alone, no NATS)"`
	ClusterNode       string   `yaml:"cluster-node" help:"this node's name in the cluster, unique and kept across restarts (default: host name and listen port)"`
	ClusterListen     string   `yaml:"cluster-listen" help:"with cluster-nats embedded: where the other nodes' NATS routes reach this one, e.g. :6222; needs cluster-peers (empty: a NATS node alone)"`
	ClusterPeers      []string `yaml:"cluster-peers" help:"with cluster-nats embedded: the other nodes' NATS routes, comma-separated, e.g. nats://hub-2:6222,nats://hub-3:6222"`
	ClusterSecret     string   `yaml:"cluster-secret" help:"with cluster-listen: the secret every node presents on its NATS routes (the same on all nodes, at least 16 characters); a node without it cannot join"`
	ClusterNATSListen string   `yaml:"cluster-nats-listen" help:"with cluster-nats embedded: also serve NATS clients (nats CLI, monitoring) on this host:port (empty: none)"`
	ClusterReplicas   int      `yaml:"cluster-replicas" help:"copies JetStream keeps of the shared state (default: 3 with two or more cluster-peers, else 1)"`

	// Limits on what HTTP clients may hold open (see limits.go).
	TrustedProxies    []string      `yaml:"trusted-proxies" help:"addresses or networks of reverse proxies and load balancers in front of the hub (comma-separated, e.g. 10.0.0.0/8); from them the client's address is taken from X-Forwarded-For, for rate limits, activation limits and logs (empty: the header is never read)"`
	HTTPIdleTimeout   time.Duration `yaml:"http-idle-timeout" help:"close a keep-alive HTTP connection idle this long (device WebSockets and event streams are not affected)"`
	MCPMaxSessions    int           `yaml:"mcp-max-sessions" help:"most /mcp sessions open at once; more are refused with 429"`
	MCPSessionTimeout time.Duration `yaml:"mcp-session-timeout" help:"close an /mcp session that made no request for this long"`
	SSEMaxStreams     int           `yaml:"sse-max-streams" help:"most GET /api/events streams open at once; more are refused with 429"`
	SSEWriteTimeout   time.Duration `yaml:"sse-write-timeout" help:"drop a client of an event stream or /mcp stream that has not taken a write for this long"`

	// MemoryLimit is applied by the process's owner with memlimit.Run,
	// not by server.Open: the limit is process-wide.
	MemoryLimit string `yaml:"memory-limit" help:"soft memory limit for the Go runtime: auto (follows what the hub holds: 2x while busy, 1.2x once settled, at least 32MiB), off, or a size such as 512MiB (GOMEMLIMIT wins over auto)"`
}

// Default returns the settings used when nothing else is given.
func Default() Config {
	return Config{
		Listen:                    ":8000",
		DataDir:                   "data",
		DeviceAuth:                "activation",
		WSProtocolVersion:         1,
		ActivationExpiry:          10 * time.Minute,
		OTAChecksPerMinute:        120,
		OTABurst:                  30,
		ActivationCodesPerAddress: 8,
		NewDevicesPerAddress:      ota.DefaultNewDevicesPerAddr,
		MaxUnusedDevices:          ota.DefaultMaxUnusedDevices,
		MQTTMaxPending:            2048,
		MQTTPendingPerAddress:     64,
		MCPDirectLimit:            8,
		MCPOAuth:                  "on",
		LogLevel:                  "info",
		LogFormat:                 "text",
		CallTimeout:               30 * time.Second,
		MaxCallTimeout:            300 * time.Second,
		MaxCalls:                  10000,
		HTTPIdleTimeout:           60 * time.Second,
		MCPMaxSessions:            64,
		MCPSessionTimeout:         10 * time.Minute,
		SSEMaxStreams:             64,
		SSEWriteTimeout:           15 * time.Second,
		MemoryLimit:               "auto",

		ConversationTimeout: 120 * time.Second,
		TTSSampleRate:       24000,
		OpusComplexity:      opus.Speech.Complexity,
		OpusBitrate:         opus.Speech.Bitrate,

		UDPSessionsPerAddress: 16,
	}
}
