package dashboard_test

import (
	"net/url"
	"testing"

	"github.com/xiaozhi-hub/hub/server/servertest"
	"github.com/xiaozhi-hub/hub/sim"
)

// On one node of a two-hub cluster, a person sees which node holds each
// device, and the calls made through the other node arrive live in the
// call history and the events, each naming its node (both nodes number
// their calls from 1, and both first calls are listed).
func TestBrowserClusterNamesTheNodes(t *testing.T) {
	hubs := servertest.StartCluster(t, servertest.ClusterConfigs(t, 2))
	const near, far = "aa:00:00:00:0c:01", "aa:00:00:00:0c:02"
	connect(t, hubs[0], sim.Config{DeviceID: near, Lamp: true})
	lamp := connect(t, hubs[1], sim.Config{DeviceID: far, Lamp: true})
	b := newBrowser(t, hubs[0].URL(), 1280, "en-US")
	b.login()
	b.waitJS("both devices listed", `document.querySelectorAll("li.device").length === 2`)
	b.waitJS("the live stream", `document.querySelector("#status").textContent === "live"`)
	b.waitJS("the device on hub-2 named with its node", `document.querySelector('li.device[data-id="`+far+`"]').textContent.includes("online via hub-2")`)
	b.waitJS("the cluster's nodes with their devices", `(() => {
		const nodes = [...document.querySelectorAll("#clusterBox:not([hidden]) li.node")].map(li => li.textContent);
		return nodes.length === 2 && nodes[0] === "hub-1 (this node) · devices online: 1" && nodes[1] === "hub-2 · devices online: 1";
	})()`)
	c := apiCall(t, hubs[1], "GET", "/api/cluster", nil)
	if c["clustered"] != true || c["node"] != "hub-2" || c["nats"] != "CONNECTED" {
		t.Fatalf("GET /api/cluster on hub-2 = %v", c)
	}

	call := func(i int, id string) {
		t.Helper()
		apiCall(t, hubs[i], "POST", "/api/devices/"+url.PathEscape(id)+"/tools/self.lamp.turn_on/call", map[string]any{"arguments": map[string]any{}})
	}
	call(1, near) // through hub-2, to the device on hub-1
	b.waitJS("hub-2's call in the live events", `document.querySelector("#events").textContent.includes("self.lamp.turn_on by api · hub-2")`)
	call(0, far) // through hub-1, to the device on hub-2
	waitFor(t, "the lamp on hub-2 on", func() bool { return lamp.LampOn() })
	b.waitJS("both nodes' first calls listed, each with its node", `(() => {
		const ids = [...document.querySelectorAll("#calls tbody tr")].map(r => r.dataset.id);
		const row = document.querySelector('#calls tbody tr[data-id="hub-2/1"]');
		return ids.includes("hub-1/1") && row && row.textContent.includes("api · hub-2");
	})()`)
	b.shot("cluster")
}
