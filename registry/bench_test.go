package registry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/xiaozhi-hub/hub"
	"github.com/xiaozhi-hub/hub/registry"
	"github.com/xiaozhi-hub/hub/registry/registrytest"
	"github.com/xiaozhi-hub/hub/store"
)

// BenchmarkCallTool measures the registry's call path, including the call
// record, against a device that answers at once, over SQLite in a temp dir:
// what the hub adds to a call.
//
//	go test -run NONE -bench CallTool -benchtime 20000x ./registry
func BenchmarkCallTool(b *testing.B) {
	for _, par := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("callers=%d", par), func(b *testing.B) {
			ctx := context.Background()
			st, err := store.Open(ctx, filepath.Join(b.TempDir(), "hub.db"), store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			reg := registry.New(st, registry.Options{})
			defer reg.Close()
			if err := reg.Load(ctx); err != nil {
				b.Fatal(err)
			}
			c := registrytest.NewConn("d1") // answers at once
			c.Answer("t", registrytest.Answer{Result: registrytest.Text("ok")})
			l := reg.Connect(registry.ConnectInfo{DeviceID: "d1", MCP: true}, c)
			if _, err := l.SetTools(ctx, []hub.Tool{{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}}); err != nil {
				b.Fatal(err)
			}
			b.SetParallelism(par)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := reg.CallTool(ctx, registry.CallRequest{DeviceID: "d1", Tool: "t", Caller: "bench"}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
