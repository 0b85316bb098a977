PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at TEXT NOT NULL
	);
INSERT INTO schema_migrations VALUES(1,'001_init.sql','2026-11-26T20:57:46Z');
INSERT INTO schema_migrations VALUES(2,'002_trust.sql','2026-11-26T20:57:46Z');
INSERT INTO schema_migrations VALUES(3,'003_device_id_case.sql','2026-11-26T20:57:46Z');
INSERT INTO schema_migrations VALUES(4,'004_trust_transport.sql','2026-11-26T20:57:46Z');
INSERT INTO schema_migrations VALUES(5,'005_device_voice.sql','2026-11-26T20:57:46Z');
INSERT INTO schema_migrations VALUES(6,'006_oauth.sql','2026-11-26T20:57:46Z');
INSERT INTO schema_migrations VALUES(7,'007_cluster_history.sql','2026-11-26T20:57:46Z');
INSERT INTO schema_migrations VALUES(8,'008_history_copied.sql','2026-11-26T20:57:46Z');
INSERT INTO schema_migrations VALUES(9,'009_oauth_rotated.sql','2026-11-26T20:57:46Z');
CREATE TABLE tool_sets (
	hash       TEXT PRIMARY KEY,
	tools_json TEXT NOT NULL CHECK (json_valid(tools_json))
);
INSERT INTO tool_sets VALUES('76205da320fb94ede4d0ff6b2cb1f47b','[{"name":"self.get_device_status","description":"Provides the real-time information of the device, including the current status of the audio speaker, screen, battery, network, etc.\nUse this tool for: \n1. Answering questions about current condition (e.g. what is the current volume of the audio speaker?)\n2. As the first step to control the device (e.g. turn up / down the volume of the audio speaker, etc.)","inputSchema":{"type":"object","properties":{}},"userOnly":false},{"name":"self.audio_speaker.set_volume","description":"Set the volume of the audio speaker. If the current volume is unknown, you must call `self.get_device_status` tool first and then call this tool.","inputSchema":{"type":"object","properties":{"volume":{"type":"integer","minimum":0,"maximum":100}},"required":["volume"]},"userOnly":false},{"name":"self.screen.set_brightness","description":"Set the brightness of the screen.","inputSchema":{"type":"object","properties":{"brightness":{"type":"integer","minimum":0,"maximum":100}},"required":["brightness"]},"userOnly":false},{"name":"self.screen.set_theme","description":"Set the theme of the screen. The theme can be `light` or `dark`.","inputSchema":{"type":"object","properties":{"theme":{"type":"string"}},"required":["theme"]},"userOnly":false},{"name":"self.lamp.get_state","description":"Get the power state of the lamp","inputSchema":{"type":"object","properties":{}},"userOnly":false},{"name":"self.lamp.turn_on","description":"Turn on the lamp","inputSchema":{"type":"object","properties":{}},"userOnly":false},{"name":"self.lamp.turn_off","description":"Turn off the lamp","inputSchema":{"type":"object","properties":{}},"userOnly":false},{"name":"self.get_system_info","description":"Get the system information","inputSchema":{"type":"object","properties":{}},"annotations":{"audience":["user"]},"userOnly":true},{"name":"self.reboot","description":"Reboot the system","inputSchema":{"type":"object","properties":{}},"annotations":{"audience":["user"]},"userOnly":true},{"name":"self.upgrade_firmware","description":"Upgrade firmware from a specific URL. This will download and install the firmware, then reboot the device.","inputSchema":{"type":"object","properties":{"url":{"type":"string","default":"The URL of the firmware binary file to download and install"}}},"annotations":{"audience":["user"]},"userOnly":true}]');
CREATE TABLE devices (
	id               TEXT PRIMARY KEY CHECK (id <> ''),
	client_id        TEXT NOT NULL DEFAULT '',
	name             TEXT NOT NULL DEFAULT '',
	room             TEXT NOT NULL DEFAULT '',
	aliases          TEXT NOT NULL DEFAULT 'null',
	board            TEXT NOT NULL DEFAULT '',
	firmware         TEXT NOT NULL DEFAULT '',
	protocol_version INTEGER NOT NULL DEFAULT 0,
	features         TEXT,
	mcp              INTEGER NOT NULL DEFAULT 0,
	system_info      TEXT,
	first_seen       INTEGER,
	last_seen        INTEGER,
	tools_hash       TEXT REFERENCES tool_sets (hash),
	tools_saved      INTEGER
, voice TEXT NOT NULL DEFAULT '');
INSERT INTO devices VALUES('aa:00:00:00:e1:01','0b7a3f4e-1111-4c2d-9e8f-000000000001','客厅灯','客厅','["大灯"]','bread-compact-wifi','2.4.2',1,'{"mcp":true}',1,'{"mac_address":"aa:00:00:00:e1:01","uuid":"0b7a3f4e-1111-4c2d-9e8f-000000000001","board":{"channel":6,"ip":"192.168.1.23","mac":"aa:00:00:00:e1:01","name":"bread-compact-wifi","rssi":-55,"ssid":"xiaozhi-sim","type":"bread-compact-wifi"},"chip_model_name":"esp32s3","application":{"compile_time":"Aug  8 2026T08:33:45Z","elf_sha256":"7736204eea3f24cd9ffb2434582dabdfbd5f538c4b901c37bdefc6e237cccbb6","idf_version":"v6.0","name":"xiaozhi","version":"2.4.2"},"version":2,"language":"zh-CN","flash_size":16777216,"minimum_free_heap_size":"123456","ota":{"label":"ota_0"},"partition_table":[{"address":36864,"label":"nvs","size":16384,"subtype":2,"type":1}],"chip_info":{"cores":2,"features":18,"model":9,"revision":2}}',1795726666890447157,1795726666980648726,'76205da320fb94ede4d0ff6b2cb1f47b',1795726666913172911,'');
INSERT INTO devices VALUES('aa:00:00:00:e1:02','0b7a3f4e-1111-4c2d-9e8f-000000000002','卧室音箱','卧室','[]','','',1,'{}',0,'{"mac_address":"aa:00:00:00:e1:02","uuid":"0b7a3f4e-1111-4c2d-9e8f-000000000002","board":{"channel":6,"ip":"192.168.1.23","mac":"aa:00:00:00:e1:02","name":"bread-compact-wifi","rssi":-55,"ssid":"xiaozhi-sim","type":"bread-compact-wifi"},"chip_model_name":"esp32s3","application":{"compile_time":"Aug  8 2026T08:33:45Z","elf_sha256":"07ebe7b84310142ac3c4552171d2b54319cf6f5b31c510a606796a981606a562","idf_version":"v6.0","name":"xiaozhi","version":"1.7.7"},"version":2,"language":"zh-CN","flash_size":16777216,"minimum_free_heap_size":"123456","ota":{"label":"ota_0"},"partition_table":[{"address":36864,"label":"nvs","size":16384,"subtype":2,"type":1}],"chip_info":{"cores":2,"features":18,"model":9,"revision":2}}',1795726666933893309,1795726666980258305,NULL,NULL,'');
INSERT INTO devices VALUES('aa:00:00:00:e1:03','0b7a3f4e-1111-4c2d-9e8f-000000000003','','','[]','','',1,'{"mcp":true}',1,'{"mac_address":"aa:00:00:00:e1:03","uuid":"0b7a3f4e-1111-4c2d-9e8f-000000000003","board":{"channel":6,"ip":"192.168.1.23","mac":"aa:00:00:00:e1:03","name":"bread-compact-wifi","rssi":-55,"ssid":"xiaozhi-sim","type":"bread-compact-wifi"},"chip_model_name":"esp32s3","application":{"compile_time":"Aug  8 2026T08:33:45Z","elf_sha256":"7736204eea3f24cd9ffb2434582dabdfbd5f538c4b901c37bdefc6e237cccbb6","idf_version":"v6.0","name":"xiaozhi","version":"2.4.2"},"version":2,"language":"zh-CN","flash_size":16777216,"minimum_free_heap_size":"123456","ota":{"label":"ota_0"},"partition_table":[{"address":36864,"label":"nvs","size":16384,"subtype":2,"type":1}],"chip_info":{"cores":2,"features":18,"model":9,"revision":2}}',1795726666952658225,1795726666976107002,NULL,NULL,'');
CREATE TABLE things (
	device_id     TEXT NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
	name          TEXT NOT NULL,
	descriptor    TEXT NOT NULL,
	state         TEXT NOT NULL,
	state_updated INTEGER,
	PRIMARY KEY (device_id, name)
) WITHOUT ROWID;
INSERT INTO things VALUES('aa:00:00:00:e1:02','Lamp','{"name":"Lamp","description":"一个测试用的灯","properties":{"power":{"description":"灯是否打开","type":"boolean"}},"methods":{"TurnOff":{"description":"关闭灯","parameters":{}},"TurnOn":{"description":"打开灯","parameters":{}}},"state":null}','{"power":false}',1795726666942244940);
INSERT INTO things VALUES('aa:00:00:00:e1:02','Speaker','{"name":"Speaker","description":"当前 AI 机器人的扬声器","properties":{"volume":{"description":"当前音量值","type":"number"}},"methods":{"SetVolume":{"description":"设置音量","parameters":{"volume":{"description":"0到100之间的整数","type":"number"}}}},"state":null}','{"volume":30}',1795726666949846165);
CREATE TABLE calls (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	device_id   TEXT NOT NULL,
	kind        TEXT NOT NULL,
	tool        TEXT NOT NULL,
	caller      TEXT NOT NULL,
	arguments   TEXT NOT NULL,
	result      TEXT NOT NULL,
	outcome     TEXT NOT NULL,
	started     INTEGER,
	duration_ms REAL NOT NULL
);
INSERT INTO calls VALUES(1,'aa:00:00:00:e1:01','mcp','self.lamp.turn_on','api','{}','[{"type":"text","text":"true"}]','ok',1795726666929977271,0.42799999999999999156);
INSERT INTO calls VALUES(2,'aa:00:00:00:e1:01','mcp','self.lamp.turn_on','api','{}','[{"type":"text","text":"true"}]','ok',1795726666930816981,2.1040000000000000923);
INSERT INTO calls VALUES(3,'aa:00:00:00:e1:02','iot','Speaker.SetVolume','api','[{"name":"Speaker","method":"SetVolume","parameters":{"volume":30}}]','','sent',1795726666949313151,0.092999999999999999333);
CREATE TABLE events (
	id        INTEGER PRIMARY KEY AUTOINCREMENT,
	type      TEXT NOT NULL,
	device_id TEXT NOT NULL,
	time      INTEGER,
	data      TEXT
, node TEXT NOT NULL DEFAULT '');
INSERT INTO events VALUES(1,'device_updated','aa:00:00:00:e1:01',1795726666890781444,'{"id":"aa:00:00:00:e1:01","name":"","room":"","aliases":[],"protocolVersion":0,"mcp":false,"firstSeen":"2026-11-26T20:57:46.890447157Z","online":false,"toolCount":0,"thingCount":0,"toolsStale":false}','');
INSERT INTO events VALUES(2,'online','aa:00:00:00:e1:01',1795726666904530630,'{"id":"aa:00:00:00:e1:01","clientId":"0b7a3f4e-1111-4c2d-9e8f-000000000001","name":"","room":"","aliases":[],"protocolVersion":1,"features":{"mcp":true},"mcp":true,"transport":"websocket","systemInfo":{"mac_address":"aa:00:00:00:e1:01","uuid":"0b7a3f4e-1111-4c2d-9e8f-000000000001","board":{"channel":6,"ip":"192.168.1.23","mac":"aa:00:00:00:e1:01","name":"bread-compact-wifi","rssi":-55,"ssid":"xiaozhi-sim","type":"bread-compact-wifi"},"chip_model_name":"esp32s3","application":{"compile_time":"Aug  8 2026T08:33:45Z","elf_sha256":"7736204eea3f24cd9ffb2434582dabdfbd5f538c4b901c37bdefc6e237cccbb6","idf_version":"v6.0","name":"xiaozhi","version":"2.4.2"},"version":2,"language":"zh-CN","flash_size":16777216,"minimum_free_heap_size":"123456","ota":{"label":"ota_0"},"partition_table":[{"address":36864,"label":"nvs","size":16384,"subtype":2,"type":1}],"chip_info":{"cores":2,"features":18,"model":9,"revision":2}},"firstSeen":"2026-11-26T20:57:46.890447157Z","lastSeen":"2026-11-26T20:57:46.904527943Z","online":true,"toolCount":0,"thingCount":0,"toolsStale":true}','');
INSERT INTO events VALUES(3,'tools_changed','aa:00:00:00:e1:01',1795726666913751630,'{"added":["self.audio_speaker.set_volume","self.get_device_status","self.get_system_info","self.lamp.get_state","self.lamp.turn_off","self.lamp.turn_on","self.reboot","self.screen.set_brightness","self.screen.set_theme","self.upgrade_firmware"],"count":10,"hash":"76205da320fb94ede4d0ff6b2cb1f47b"}','');
INSERT INTO events VALUES(4,'device_updated','aa:00:00:00:e1:01',1795726666929572272,'{"id":"aa:00:00:00:e1:01","clientId":"0b7a3f4e-1111-4c2d-9e8f-000000000001","name":"客厅灯","room":"客厅","aliases":["大灯"],"board":"bread-compact-wifi","firmware":"2.4.2","protocolVersion":1,"features":{"mcp":true},"mcp":true,"transport":"websocket","systemInfo":{"mac_address":"aa:00:00:00:e1:01","uuid":"0b7a3f4e-1111-4c2d-9e8f-000000000001","board":{"channel":6,"ip":"192.168.1.23","mac":"aa:00:00:00:e1:01","name":"bread-compact-wifi","rssi":-55,"ssid":"xiaozhi-sim","type":"bread-compact-wifi"},"chip_model_name":"esp32s3","application":{"compile_time":"Aug  8 2026T08:33:45Z","elf_sha256":"7736204eea3f24cd9ffb2434582dabdfbd5f538c4b901c37bdefc6e237cccbb6","idf_version":"v6.0","name":"xiaozhi","version":"2.4.2"},"version":2,"language":"zh-CN","flash_size":16777216,"minimum_free_heap_size":"123456","ota":{"label":"ota_0"},"partition_table":[{"address":36864,"label":"nvs","size":16384,"subtype":2,"type":1}],"chip_info":{"cores":2,"features":18,"model":9,"revision":2}},"firstSeen":"2026-11-26T20:57:46.890447157Z","lastSeen":"2026-11-26T20:57:46.904527943Z","online":true,"toolCount":10,"thingCount":0,"toolsHash":"76205da320fb94ede4d0ff6b2cb1f47b","toolsStale":false}','');
INSERT INTO events VALUES(5,'device_updated','aa:00:00:00:e1:02',1795726666934077451,'{"id":"aa:00:00:00:e1:02","name":"","room":"","aliases":[],"protocolVersion":0,"mcp":false,"firstSeen":"2026-11-26T20:57:46.933893309Z","online":false,"toolCount":0,"thingCount":0,"toolsStale":false}','');
INSERT INTO events VALUES(6,'online','aa:00:00:00:e1:02',1795726666940783039,'{"id":"aa:00:00:00:e1:02","clientId":"0b7a3f4e-1111-4c2d-9e8f-000000000002","name":"","room":"","aliases":[],"protocolVersion":1,"features":{},"mcp":false,"transport":"websocket","systemInfo":{"mac_address":"aa:00:00:00:e1:02","uuid":"0b7a3f4e-1111-4c2d-9e8f-000000000002","board":{"channel":6,"ip":"192.168.1.23","mac":"aa:00:00:00:e1:02","name":"bread-compact-wifi","rssi":-55,"ssid":"xiaozhi-sim","type":"bread-compact-wifi"},"chip_model_name":"esp32s3","application":{"compile_time":"Aug  8 2026T08:33:45Z","elf_sha256":"07ebe7b84310142ac3c4552171d2b54319cf6f5b31c510a606796a981606a562","idf_version":"v6.0","name":"xiaozhi","version":"1.7.7"},"version":2,"language":"zh-CN","flash_size":16777216,"minimum_free_heap_size":"123456","ota":{"label":"ota_0"},"partition_table":[{"address":36864,"label":"nvs","size":16384,"subtype":2,"type":1}],"chip_info":{"cores":2,"features":18,"model":9,"revision":2}},"firstSeen":"2026-11-26T20:57:46.933893309Z","lastSeen":"2026-11-26T20:57:46.940781435Z","online":true,"toolCount":0,"thingCount":0,"toolsStale":false}','');
INSERT INTO events VALUES(7,'iot_changed','aa:00:00:00:e1:02',1795726666942074272,'{"descriptor":true,"thing":"Speaker"}','');
INSERT INTO events VALUES(8,'iot_changed','aa:00:00:00:e1:02',1795726666942238418,'{"descriptor":true,"thing":"Lamp"}','');
INSERT INTO events VALUES(9,'iot_changed','aa:00:00:00:e1:02',1795726666942348978,'{"state":{"volume":70},"thing":"Speaker"}','');
INSERT INTO events VALUES(10,'iot_changed','aa:00:00:00:e1:02',1795726666942480861,'{"state":{"power":false},"thing":"Lamp"}','');
INSERT INTO events VALUES(11,'device_updated','aa:00:00:00:e1:02',1795726666948821400,'{"id":"aa:00:00:00:e1:02","clientId":"0b7a3f4e-1111-4c2d-9e8f-000000000002","name":"卧室音箱","room":"卧室","aliases":[],"protocolVersion":1,"features":{},"mcp":false,"transport":"websocket","systemInfo":{"mac_address":"aa:00:00:00:e1:02","uuid":"0b7a3f4e-1111-4c2d-9e8f-000000000002","board":{"channel":6,"ip":"192.168.1.23","mac":"aa:00:00:00:e1:02","name":"bread-compact-wifi","rssi":-55,"ssid":"xiaozhi-sim","type":"bread-compact-wifi"},"chip_model_name":"esp32s3","application":{"compile_time":"Aug  8 2026T08:33:45Z","elf_sha256":"07ebe7b84310142ac3c4552171d2b54319cf6f5b31c510a606796a981606a562","idf_version":"v6.0","name":"xiaozhi","version":"1.7.7"},"version":2,"language":"zh-CN","flash_size":16777216,"minimum_free_heap_size":"123456","ota":{"label":"ota_0"},"partition_table":[{"address":36864,"label":"nvs","size":16384,"subtype":2,"type":1}],"chip_info":{"cores":2,"features":18,"model":9,"revision":2}},"firstSeen":"2026-11-26T20:57:46.933893309Z","lastSeen":"2026-11-26T20:57:46.940781435Z","online":true,"toolCount":0,"thingCount":2,"toolsStale":false}','');
INSERT INTO events VALUES(12,'device_message','aa:00:00:00:e1:02',1795726666949659465,'{"message":{"session_id":"a9fc5a77511c94cffc1aaee82090fab7","type":"listen","state":"start","mode":"auto"},"type":"listen"}','');
INSERT INTO events VALUES(13,'voice_turn','aa:00:00:00:e1:02',1795726666949791841,'{"deviceId":"aa:00:00:00:e1:02","heard":"","answer":"这个 hub 还没有配置语音：请设置 asr-provider, tts-provider, agent-provider。","outcome":"not_configured","recognitionMs":0,"totalMs":0.14}','');
INSERT INTO events VALUES(14,'device_message','aa:00:00:00:e1:02',1795726666949949913,'{"message":{"session_id":"a9fc5a77511c94cffc1aaee82090fab7","type":"listen","state":"start","mode":"auto"},"type":"listen"}','');
INSERT INTO events VALUES(15,'iot_changed','aa:00:00:00:e1:02',1795726666950190073,'{"state":{"volume":30},"thing":"Speaker"}','');
INSERT INTO events VALUES(16,'device_updated','aa:00:00:00:e1:03',1795726666952793008,'{"id":"aa:00:00:00:e1:03","name":"","room":"","aliases":[],"protocolVersion":0,"mcp":false,"firstSeen":"2026-11-26T20:57:46.952658225Z","online":false,"toolCount":0,"thingCount":0,"toolsStale":false}','');
INSERT INTO events VALUES(17,'online','aa:00:00:00:e1:03',1795726666956746776,'{"id":"aa:00:00:00:e1:03","clientId":"0b7a3f4e-1111-4c2d-9e8f-000000000003","name":"","room":"","aliases":[],"protocolVersion":1,"features":{"mcp":true},"mcp":true,"transport":"websocket","systemInfo":{"mac_address":"aa:00:00:00:e1:03","uuid":"0b7a3f4e-1111-4c2d-9e8f-000000000003","board":{"channel":6,"ip":"192.168.1.23","mac":"aa:00:00:00:e1:03","name":"bread-compact-wifi","rssi":-55,"ssid":"xiaozhi-sim","type":"bread-compact-wifi"},"chip_model_name":"esp32s3","application":{"compile_time":"Aug  8 2026T08:33:45Z","elf_sha256":"7736204eea3f24cd9ffb2434582dabdfbd5f538c4b901c37bdefc6e237cccbb6","idf_version":"v6.0","name":"xiaozhi","version":"2.4.2"},"version":2,"language":"zh-CN","flash_size":16777216,"minimum_free_heap_size":"123456","ota":{"label":"ota_0"},"partition_table":[{"address":36864,"label":"nvs","size":16384,"subtype":2,"type":1}],"chip_info":{"cores":2,"features":18,"model":9,"revision":2}},"firstSeen":"2026-11-26T20:57:46.952658225Z","lastSeen":"2026-11-26T20:57:46.956745385Z","online":true,"toolCount":0,"thingCount":0,"toolsStale":true}','');
INSERT INTO events VALUES(18,'offline','aa:00:00:00:e1:03',1795726666976383991,'{"reason":"device tokens revoked"}','');
INSERT INTO events VALUES(19,'offline','aa:00:00:00:e1:02',1795726666980434906,'{"reason":"connection dropped"}','');
INSERT INTO events VALUES(20,'offline','aa:00:00:00:e1:01',1795726666980738235,'{"reason":"connection dropped"}','');
CREATE TABLE device_trust (
	device_id          TEXT PRIMARY KEY CHECK (device_id <> ''),
	client_id          TEXT NOT NULL DEFAULT '',
	generation         INTEGER NOT NULL DEFAULT 0,
	approved           INTEGER,
	revoked            INTEGER,
	activation_version INTEGER NOT NULL DEFAULT 0,
	serial_number      TEXT NOT NULL DEFAULT '',
	activation_hmac    TEXT NOT NULL DEFAULT '',
	board              TEXT NOT NULL DEFAULT '',
	firmware           TEXT NOT NULL DEFAULT '',
	system_info        TEXT,
	last_check         INTEGER
, transport TEXT NOT NULL DEFAULT '') WITHOUT ROWID;
INSERT INTO device_trust VALUES('aa:00:00:00:e1:01','0b7a3f4e-1111-4c2d-9e8f-000000000001',0,1795726666890415965,NULL,1,'','','bread-compact-wifi','2.4.2','{"mac_address":"aa:00:00:00:e1:01","uuid":"0b7a3f4e-1111-4c2d-9e8f-000000000001","board":{"channel":6,"ip":"192.168.1.23","mac":"aa:00:00:00:e1:01","name":"bread-compact-wifi","rssi":-55,"ssid":"xiaozhi-sim","type":"bread-compact-wifi"},"chip_model_name":"esp32s3","application":{"compile_time":"Aug  8 2026T08:33:45Z","elf_sha256":"7736204eea3f24cd9ffb2434582dabdfbd5f538c4b901c37bdefc6e237cccbb6","idf_version":"v6.0","name":"xiaozhi","version":"2.4.2"},"version":2,"language":"zh-CN","flash_size":16777216,"minimum_free_heap_size":"123456","ota":{"label":"ota_0"},"partition_table":[{"address":36864,"label":"nvs","size":16384,"subtype":2,"type":1}],"chip_info":{"cores":2,"features":18,"model":9,"revision":2}}',1795726666896596883,'');
INSERT INTO device_trust VALUES('aa:00:00:00:e1:02','0b7a3f4e-1111-4c2d-9e8f-000000000002',0,1795726666933891757,NULL,1,'','','bread-compact-wifi','1.7.7','{"mac_address":"aa:00:00:00:e1:02","uuid":"0b7a3f4e-1111-4c2d-9e8f-000000000002","board":{"channel":6,"ip":"192.168.1.23","mac":"aa:00:00:00:e1:02","name":"bread-compact-wifi","rssi":-55,"ssid":"xiaozhi-sim","type":"bread-compact-wifi"},"chip_model_name":"esp32s3","application":{"compile_time":"Aug  8 2026T08:33:45Z","elf_sha256":"07ebe7b84310142ac3c4552171d2b54319cf6f5b31c510a606796a981606a562","idf_version":"v6.0","name":"xiaozhi","version":"1.7.7"},"version":2,"language":"zh-CN","flash_size":16777216,"minimum_free_heap_size":"123456","ota":{"label":"ota_0"},"partition_table":[{"address":36864,"label":"nvs","size":16384,"subtype":2,"type":1}],"chip_info":{"cores":2,"features":18,"model":9,"revision":2}}',1795726666939527714,'');
INSERT INTO device_trust VALUES('aa:00:00:00:e1:03','0b7a3f4e-1111-4c2d-9e8f-000000000003',436088903955064129,NULL,1795726666957340240,1,'','','bread-compact-wifi','2.4.2','{"mac_address":"aa:00:00:00:e1:03","uuid":"0b7a3f4e-1111-4c2d-9e8f-000000000003","board":{"channel":6,"ip":"192.168.1.23","mac":"aa:00:00:00:e1:03","name":"bread-compact-wifi","rssi":-55,"ssid":"xiaozhi-sim","type":"bread-compact-wifi"},"chip_model_name":"esp32s3","application":{"compile_time":"Aug  8 2026T08:33:45Z","elf_sha256":"7736204eea3f24cd9ffb2434582dabdfbd5f538c4b901c37bdefc6e237cccbb6","idf_version":"v6.0","name":"xiaozhi","version":"2.4.2"},"version":2,"language":"zh-CN","flash_size":16777216,"minimum_free_heap_size":"123456","ota":{"label":"ota_0"},"partition_table":[{"address":36864,"label":"nvs","size":16384,"subtype":2,"type":1}],"chip_info":{"cores":2,"features":18,"model":9,"revision":2}}',1795726666953410363,'');
CREATE TABLE oauth_clients (
	client_id     TEXT PRIMARY KEY,
	name          TEXT NOT NULL,
	redirect_uris TEXT NOT NULL, -- JSON array of strings
	auth_method   TEXT NOT NULL,
	secret_hash   BLOB,
	registered    INTEGER NOT NULL,
	address       TEXT NOT NULL DEFAULT ''
);
CREATE TABLE oauth_grants (
	grant_id        TEXT PRIMARY KEY,
	client_id       TEXT NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
	approved        INTEGER NOT NULL,
	access_hash     BLOB NOT NULL,
	access_expires  INTEGER NOT NULL,
	refresh_hash    BLOB NOT NULL,
	refresh_expires INTEGER NOT NULL,
	last_used       INTEGER
, rotated BLOB);
CREATE TABLE peer_calls (
	node        TEXT NOT NULL,
	id          INTEGER NOT NULL,
	device_id   TEXT NOT NULL,
	kind        TEXT NOT NULL,
	tool        TEXT NOT NULL,
	caller      TEXT NOT NULL,
	arguments   TEXT NOT NULL,
	result      TEXT NOT NULL,
	outcome     TEXT NOT NULL,
	started     INTEGER,
	duration_ms REAL NOT NULL,
	PRIMARY KEY (node, id)
);
CREATE TABLE history_copied (
	stream TEXT PRIMARY KEY,
	seq    INTEGER NOT NULL
);
DELETE FROM sqlite_sequence;
INSERT INTO sqlite_sequence VALUES('events',20);
INSERT INTO sqlite_sequence VALUES('calls',3);
CREATE INDEX devices_tools_hash ON devices (tools_hash);
CREATE INDEX calls_device ON calls (device_id, id);
CREATE INDEX events_device ON events (device_id, id);
CREATE INDEX oauth_grants_client ON oauth_grants (client_id);
CREATE INDEX peer_calls_started ON peer_calls (started);
CREATE INDEX peer_calls_device ON peer_calls (device_id, started);
COMMIT;
