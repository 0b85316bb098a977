// Package protocol is the xiaozhi device wire protocol as the firmware speaks
// it (see docs/protocol.md): JSON text frames with a
// string "type", binary audio frames in three framings, MCP JSON-RPC 2.0
// inside {"session_id","type":"mcp","payload"} envelopes, and the legacy IoT
// messages of firmware 1.x. It holds no sockets and no state.
//
// Protocol flow over one WebSocket connection:
//
//	device: HTTP upgrade with Device-Id, Client-Id, Protocol-Version, Authorization
//	device: {"type":"hello","version":1,"features":{"mcp":true},"transport":"websocket","audio_params":{…}}
//	hub:    {"type":"hello","transport":"websocket","session_id":"…","audio_params":{…}}   (within 10 s)
//	hub:    mcp initialize → device: result (serverInfo = board, firmware)
//	hub:    mcp notifications/initialized
//	hub:    mcp tools/list {withUserTools:true} … following nextCursor (a tool name) until absent
//	hub:    mcp tools/call … whenever asked
//	device: listen / abort / binary Opus frames / (firmware 1.x) iot descriptors and states
//	either: TCP close (the device never sends a Close frame)
package protocol
