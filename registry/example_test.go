package registry_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/store"
)

// A registry keeps every device in memory and writes through to its Store:
// a device named before it ever connects is still known, with its name,
// after a restart.
func Example() {
	dir, err := os.MkdirTemp("", "registry-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	path := filepath.Join(dir, "hub.db")

	open := func() (*registry.Registry, func()) {
		st, err := store.Open(ctx, path, store.Options{})
		if err != nil {
			panic(err)
		}
		reg := registry.New(st, registry.Options{})
		if err := reg.Load(ctx); err != nil {
			panic(err)
		}
		return reg, func() { reg.Close(); st.Close() }
	}

	reg, closeReg := open()
	name, room := "吸顶灯", "客厅"
	if _, err := reg.Register(ctx, "aa:bb:cc:dd:ee:01", hub.DevicePatch{Name: &name, Room: &room}); err != nil {
		fmt.Println(err)
	}
	closeReg()

	reg, closeReg = open() // as after a restart
	defer closeReg()
	for _, d := range reg.Devices() {
		fmt.Println(d.ID, d.Name, d.Room, "online:", d.Online)
	}
	_, err = reg.Device("aa:bb:cc:dd:ee:02")
	fmt.Println(hub.ErrorCode(err))
	// Output:
	// aa:bb:cc:dd:ee:01 吸顶灯 客厅 online: false
	// not_found
}
