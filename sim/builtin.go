package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// Built-in tools (docs/protocol.md §8.6), with the firmware's names, descriptions and
// schemas. They are shared by all devices; state lives in the Device.
var (
	toolGetDeviceStatus = &Tool{
		Name: "self.get_device_status",
		Description: "Provides the real-time information of the device, including the current status of the audio speaker, screen, battery, network, etc.\n" +
			"Use this tool for: \n" +
			"1. Answering questions about current condition (e.g. what is the current volume of the audio speaker?)\n" +
			"2. As the first step to control the device (e.g. turn up / down the volume of the audio speaker, etc.)",
		Handler: func(ctx context.Context, _ Args) (any, error) {
			return DeviceFrom(ctx).statusJSON(), nil
		},
	}
	toolSetVolume = &Tool{
		Name:        "self.audio_speaker.set_volume",
		Description: "Set the volume of the audio speaker. If the current volume is unknown, you must call `self.get_device_status` tool first and then call this tool.",
		Props:       []Prop{Int("volume").Range(0, 100)},
		Handler: func(ctx context.Context, a Args) (any, error) {
			d := DeviceFrom(ctx)
			d.mu.Lock()
			d.volume = a.Int("volume")
			d.mu.Unlock()
			return true, nil
		},
	}
	toolSetBrightness = &Tool{
		Name:        "self.screen.set_brightness",
		Description: "Set the brightness of the screen.",
		Props:       []Prop{Int("brightness").Range(0, 100)},
		Handler: func(ctx context.Context, a Args) (any, error) {
			d := DeviceFrom(ctx)
			d.mu.Lock()
			d.brightness = a.Int("brightness")
			d.mu.Unlock()
			return true, nil
		},
	}
	toolSetTheme = &Tool{
		Name:        "self.screen.set_theme",
		Description: "Set the theme of the screen. The theme can be `light` or `dark`.",
		Props:       []Prop{String("theme")},
		Handler: func(ctx context.Context, a Args) (any, error) {
			theme := a.String("theme")
			if theme != "light" && theme != "dark" {
				return false, nil // unknown theme: "false", not an error
			}
			d := DeviceFrom(ctx)
			d.mu.Lock()
			d.theme = theme
			d.mu.Unlock()
			return true, nil
		},
	}
	// Board-specific lamp tools (lamp_controller.h).
	toolLampGetState = &Tool{
		Name:        "self.lamp.get_state",
		Description: "Get the power state of the lamp",
		Handler: func(ctx context.Context, _ Args) (any, error) {
			if DeviceFrom(ctx).LampOn() {
				return `{"power": true}`, nil
			}
			return `{"power": false}`, nil
		},
	}
	toolLampTurnOn  = lampSwitch("self.lamp.turn_on", "Turn on the lamp", true)
	toolLampTurnOff = lampSwitch("self.lamp.turn_off", "Turn off the lamp", false)

	// User-only tools (AddUserOnlyTools).
	toolGetSystemInfo = &Tool{
		Name:        "self.get_system_info",
		Description: "Get the system information",
		UserOnly:    true,
		Handler: func(ctx context.Context, _ Args) (any, error) {
			return DeviceFrom(ctx).systemInfoJSON(), nil
		},
	}
	toolReboot = &Tool{
		Name:        "self.reboot",
		Description: "Reboot the system",
		UserOnly:    true,
		Handler: func(ctx context.Context, _ Args) (any, error) {
			DeviceFrom(ctx).reboot(linkFrom(ctx)) // drops ~1 s later, after the reply
			return true, nil
		},
	}
	toolUpgradeFirmware = &Tool{
		Name:        "self.upgrade_firmware",
		Description: "Upgrade firmware from a specific URL. This will download and install the firmware, then reboot the device.",
		// Quirk kept from the firmware: the default is the description
		// text, so url is not required (§8.6, §13).
		Props:    []Prop{String("url").Default("The URL of the firmware binary file to download and install")},
		UserOnly: true,
		Handler: func(ctx context.Context, a Args) (any, error) {
			d := DeviceFrom(ctx)
			url := a.String("url")
			d.mu.Lock()
			d.upgradeURL = url
			d.mu.Unlock()
			// The real device downloads, flashes and reboots; a URL that is
			// not http(s) fails to download and the device carries on.
			if strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://") {
				d.reboot(linkFrom(ctx))
			}
			return true, nil
		},
	}
)

func lampSwitch(name, desc string, on bool) *Tool {
	return &Tool{Name: name, Description: desc, Handler: func(ctx context.Context, _ Args) (any, error) {
		d := DeviceFrom(ctx)
		d.mu.Lock()
		d.lampOn = on
		d.mu.Unlock()
		return true, nil
	}}
}

// builtinTools is the firmware's registration order: common tools, board
// tools, user-only tools (§8.4, §8.6).
func builtinTools(cfg Config) []*Tool {
	tools := []*Tool{toolGetDeviceStatus, toolSetVolume}
	if !cfg.NoScreen {
		tools = append(tools, toolSetBrightness, toolSetTheme)
	}
	if cfg.Lamp {
		tools = append(tools, toolLampGetState, toolLampTurnOn, toolLampTurnOff)
	}
	return append(tools, toolGetSystemInfo, toolReboot, toolUpgradeFirmware)
}

// statusJSON is Board::GetDeviceStatusJson for a Wi-Fi board with a battery.
func (d *Device) statusJSON() json.RawMessage {
	type screen struct {
		Brightness int    `json:"brightness"`
		Theme      string `json:"theme"`
	}
	var s struct {
		AudioSpeaker struct {
			Volume int `json:"volume"`
		} `json:"audio_speaker"`
		Screen  *screen `json:"screen,omitempty"`
		Battery struct {
			Level    int  `json:"level"`
			Charging bool `json:"charging"`
		} `json:"battery"`
		Network struct {
			Type   string `json:"type"`
			SSID   string `json:"ssid"`
			Signal string `json:"signal"`
		} `json:"network"`
	}
	d.mu.Lock()
	s.AudioSpeaker.Volume = d.volume
	if !d.cfg.NoScreen {
		s.Screen = &screen{d.brightness, d.theme}
	}
	s.Battery.Level = d.battery
	d.mu.Unlock()
	s.Network.Type, s.Network.SSID, s.Network.Signal = "wifi", "xiaozhi-sim", "strong"
	return marshal(s)
}

// systemInfoJSON is Board::GetSystemInfoJson (§2.1), with plausible values.
func (d *Device) systemInfoJSON() json.RawMessage {
	type partition struct {
		Label   string `json:"label"`
		Type    int    `json:"type"`
		Subtype int    `json:"subtype"`
		Address int    `json:"address"`
		Size    int    `json:"size"`
	}
	type app struct {
		Name        string `json:"name"`
		Version     string `json:"version"`
		CompileTime string `json:"compile_time"`
		IDFVersion  string `json:"idf_version"`
		ELFSHA256   string `json:"elf_sha256"`
	}
	type board struct {
		Type    string `json:"type"`
		Name    string `json:"name"`
		SSID    string `json:"ssid"`
		RSSI    int    `json:"rssi"`
		Channel int    `json:"channel"`
		IP      string `json:"ip"`
		MAC     string `json:"mac"`
	}
	type chip struct {
		Model    int `json:"model"`
		Cores    int `json:"cores"`
		Revision int `json:"revision"`
		Features int `json:"features"`
	}
	sum := sha256.Sum256([]byte(d.cfg.Board + "/" + d.cfg.Firmware))
	return marshal(struct {
		Version        int               `json:"version"`
		Language       string            `json:"language"`
		FlashSize      int               `json:"flash_size"`
		MinFreeHeap    string            `json:"minimum_free_heap_size"` // a string on the firmware
		MAC            string            `json:"mac_address"`
		UUID           string            `json:"uuid"`
		ChipModel      string            `json:"chip_model_name"`
		ChipInfo       chip              `json:"chip_info"`
		Application    app               `json:"application"`
		PartitionTable []partition       `json:"partition_table"`
		OTA            map[string]string `json:"ota"`
		Board          board             `json:"board"`
	}{
		2, "zh-CN", 16 << 20, "123456", d.cfg.DeviceID, d.cfg.ClientID, "esp32s3",
		chip{9, 2, 2, 18},
		app{"xiaozhi", d.cfg.Firmware, "Aug  8 2026T08:33:45Z", "v6.0", hex.EncodeToString(sum[:])},
		[]partition{{"nvs", 1, 2, 36864, 16384}},
		map[string]string{"label": "ota_0"},
		board{d.cfg.Board, d.cfg.Board, "xiaozhi-sim", -55, 6, "192.168.1.23", d.cfg.DeviceID},
	})
}
