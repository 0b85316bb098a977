package sim

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultIDPrefix is the first octets of generated device ids.
const DefaultIDPrefix = "aa:bb:cc"

// MAC returns the n-th device id under prefix (one to five hex octets,
// colon-separated), e.g. MAC("aa:bb:cc", 1) = "aa:bb:cc:00:00:01".
func MAC(prefix string, n int) (string, error) {
	if prefix == "" {
		prefix = DefaultIDPrefix
	}
	octets := strings.Split(strings.ToLower(prefix), ":")
	if len(octets) > 5 {
		return "", fmt.Errorf("sim: id prefix %q has more than 5 octets", prefix)
	}
	for _, o := range octets {
		if _, err := strconv.ParseUint(o, 16, 8); err != nil || len(o) != 2 {
			return "", fmt.Errorf("sim: id prefix %q: %q is not a two-digit hex octet", prefix, o)
		}
	}
	free := 6 - len(octets)
	if n < 0 || n >= 1<<(8*free) {
		return "", fmt.Errorf("sim: device number %d does not fit in %d octets after %q", n, free, prefix)
	}
	for i := free - 1; i >= 0; i-- {
		octets = append(octets, fmt.Sprintf("%02x", (n>>(8*i))&0xff))
	}
	return strings.Join(octets, ":"), nil
}

// Profile shapes a device for demos: labels plus hardware and firmware.
type Profile struct {
	Name, Room string   // labels for the hub's demo mode; not sent on the wire
	Aliases    []string // other names people use, e.g. in the other language
	Board      string
	Firmware   string
	Mode       Mode
	Lamp       bool
	NoScreen   bool
	IoTThings  string
}

// Apply sets the profile's fields on c.
func (p Profile) Apply(c *Config) {
	c.Name, c.Room, c.Aliases = p.Name, p.Room, p.Aliases
	if p.Board != "" {
		c.Board = p.Board
	}
	if p.Firmware != "" {
		c.Firmware = p.Firmware
	}
	if p.Mode != "" {
		c.Mode = p.Mode
	}
	c.Lamp, c.NoScreen = p.Lamp, p.NoScreen
	if p.IoTThings != "" {
		c.IoTThings = p.IoTThings
	}
}

// DemoProfiles are the hub's --demo home: four devices in four rooms,
// named in Chinese with English aliases, so that a request such as "打开客厅的灯"
// or "kitchen speaker volume" has exactly one right device (README.md, "Set-up",
// lists the requests; server's TestDemoHomeAnswersReadmeRequests
// checks them).
var DemoProfiles = []Profile{
	{Name: "客厅的灯", Room: "客厅", Aliases: []string{"living room lamp"}, Board: "esp-box-3", Mode: ModeMCP, Lamp: true},
	{Name: "厨房音箱", Room: "厨房", Aliases: []string{"kitchen speaker"}, Board: "bread-compact-wifi", Mode: ModeMCP, NoScreen: true},
	{Name: "书房小智 (1.7)", Room: "书房", Aliases: []string{"study xiaozhi (legacy 1.7)"}, Board: "bread-compact-wifi",
		Firmware: "1.7.7", Mode: ModeIoT, IoTThings: ThingsV177},
	{Name: "卧室的灯", Room: "卧室", Aliases: []string{"bedroom lamp"}, Board: "bread-compact-wifi", Mode: ModeMCP, Lamp: true, NoScreen: true},
}

// FleetConfig describes a group of devices.
type FleetConfig struct {
	// Base is copied for every device; DeviceID and ClientID are generated.
	Base     Config
	Count    int
	IDPrefix string // default DefaultIDPrefix; device i (from 1) is MAC(IDPrefix, i)
	// Profiles, if set, are applied to the devices in turn.
	Profiles []Profile
	// Stagger spaces out the first connections (load tests).
	Stagger time.Duration
}

// Fleet is a group of devices run together.
type Fleet struct {
	Devices []*Device
	stagger time.Duration
}

// NewFleet creates the devices of fc without connecting them.
func NewFleet(fc FleetConfig) (*Fleet, error) {
	f := &Fleet{stagger: fc.Stagger}
	for i := 1; i <= fc.Count; i++ {
		id, err := MAC(fc.IDPrefix, i)
		if err != nil {
			return nil, err
		}
		cfg := fc.Base
		cfg.DeviceID, cfg.ClientID = id, ""
		if len(fc.Profiles) > 0 {
			fc.Profiles[(i-1)%len(fc.Profiles)].Apply(&cfg)
		}
		f.Devices = append(f.Devices, New(cfg))
	}
	return f, nil
}

// Run runs every device (see Device.Run) until ctx ends, then waits for
// all of them to stop.
func (f *Fleet) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for i, d := range f.Devices {
		if i > 0 && f.stagger > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(f.stagger):
			}
		}
		wg.Go(func() { _ = d.Run(ctx) })
	}
	wg.Wait()
}

// Connected returns how many devices currently have an accepted hello.
func (f *Fleet) Connected() int {
	n := 0
	for _, d := range f.Devices {
		if d.Connected() {
			n++
		}
	}
	return n
}
