package catalog_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/catalog"
	ct "github.com/xiaozhi-hub/hub/catalog/catalogtest"
)

// BenchmarkToolsPerPrincipal measures what a principal's view costs the
// catalog with 1,000 devices in 100 homes: the tools offered (what /mcp and
// the agent ask at every sync and step) and a search, for the hub itself
// (every device, as before people) and for a person in one home.
func BenchmarkToolsPerPrincipal(b *testing.B) {
	reg := ct.NewRegistry(b)
	for i := range 1000 {
		s := ct.Spec{ID: fmt.Sprintf("bb:00:00:00:%02x:%02x", i/256, i%256), Name: fmt.Sprint("灯", i), Room: fmt.Sprint("room", i%10), Tools: ct.Lamp()}
		ct.Connect(b, reg, s)
		home := fmt.Sprint("h", i%100)
		if _, err := reg.UpdateDevice(context.Background(), s.ID, hub.DevicePatch{Home: &home}); err != nil {
			b.Fatal(err)
		}
	}
	cat := catalog.New(reg, catalog.Options{DirectLimit: 20})
	person := hub.WithPrincipal(context.Background(), &hub.Principal{User: "alice", Homes: map[string]hub.Role{"h7": hub.RoleOwner}})
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{{"hub", context.Background()}, {"person", person}} {
		b.Run("tools/"+c.name, func(b *testing.B) {
			for b.Loop() {
				cat.Tools(c.ctx)
			}
		})
		b.Run("search/"+c.name, func(b *testing.B) {
			for b.Loop() {
				cat.Search(c.ctx, "room3 灯", 5)
			}
		})
	}
}

// BenchmarkCatalogMemory reports the heap a catalog keeps per device once
// built (2,000 devices of one model, the firmware's lamp tools), after a
// collection: what an MCP client's first look, or the agent's first turn,
// costs a hub per device it holds; "with", a second catalog over the
// first's cache, as the MCP server's is over the agent's.
func BenchmarkCatalogMemory(b *testing.B) {
	reg := ct.NewRegistry(b)
	const n = 2000
	for i := range n {
		ct.Connect(b, reg, ct.Spec{ID: fmt.Sprintf("bb:00:00:00:%02x:%02x", i/256, i%256), Name: fmt.Sprint("灯", i),
			Room: fmt.Sprint("room", i%10), Tools: ct.Lamp()})
	}
	base := catalog.New(reg, catalog.Options{})
	base.Tools(context.Background()) // what is built once per process
	for _, c := range []struct {
		name string
		make func() *catalog.Catalog
	}{
		{"new", func() *catalog.Catalog { return catalog.New(reg, catalog.Options{}) }},
		{"with", func() *catalog.Catalog { return base.With(catalog.Options{Caller: "mcp"}) }}, // the MCP server's beside the agent's
	} {
		b.Run(c.name, func(b *testing.B) {
			var kept float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				cat := c.make()
				cat.Tools(context.Background())
				runtime.GC()
				runtime.ReadMemStats(&after)
				kept += float64(after.HeapAlloc) - float64(before.HeapAlloc)
				runtime.KeepAlive(cat)
			}
			b.ReportMetric(kept/float64(b.N)/n/1024, "KB/device")
		})
	}
}
