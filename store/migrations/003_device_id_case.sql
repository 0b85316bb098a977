-- Device ids shaped like MAC addresses are lower case from now on
-- (hub.NormalizeDeviceID): "DE:00:00:00:00:01" sent by a browser client was
-- a second device beside the firmware's "de:00:00:00:00:01". Rows under an
-- upper-case id move to the lower-case one. Where both exist they are
-- merged, losing nothing a person set or the hub learnt: names, rooms and
-- aliases are kept where set (the lower-case row's first), connection
-- metadata and tools come from the row seen last, things are united (the
-- newer state wins for a thing both have), calls and events are renamed.

CREATE TEMP TABLE case_ids AS
	SELECT id AS old FROM devices WHERE ((id GLOB '[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]' OR id GLOB '[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]') AND id <> lower(id))
	UNION SELECT device_id FROM device_trust WHERE ((device_id GLOB '[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]' OR device_id GLOB '[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]') AND device_id <> lower(device_id));

INSERT INTO devices (id, client_id, name, room, aliases, board, firmware, protocol_version,
		features, mcp, system_info, first_seen, last_seen, tools_hash, tools_saved)
	SELECT lower(id), client_id, name, room, aliases, board, firmware, protocol_version,
		features, mcp, system_info, first_seen, last_seen, tools_hash, tools_saved
	FROM devices WHERE id IN (SELECT old FROM case_ids) ORDER BY coalesce(last_seen, 0), id
ON CONFLICT (id) DO UPDATE SET
	name = CASE WHEN devices.name = '' THEN excluded.name ELSE devices.name END,
	room = CASE WHEN devices.room = '' THEN excluded.room ELSE devices.room END,
	aliases = CASE WHEN devices.aliases IN ('null', '[]') THEN excluded.aliases ELSE devices.aliases END,
	client_id = CASE WHEN coalesce(excluded.last_seen, 0) > coalesce(devices.last_seen, 0) THEN excluded.client_id ELSE devices.client_id END,
	board = CASE WHEN coalesce(excluded.last_seen, 0) > coalesce(devices.last_seen, 0) THEN excluded.board ELSE devices.board END,
	firmware = CASE WHEN coalesce(excluded.last_seen, 0) > coalesce(devices.last_seen, 0) THEN excluded.firmware ELSE devices.firmware END,
	protocol_version = CASE WHEN coalesce(excluded.last_seen, 0) > coalesce(devices.last_seen, 0) THEN excluded.protocol_version ELSE devices.protocol_version END,
	features = CASE WHEN coalesce(excluded.last_seen, 0) > coalesce(devices.last_seen, 0) THEN excluded.features ELSE devices.features END,
	mcp = CASE WHEN coalesce(excluded.last_seen, 0) > coalesce(devices.last_seen, 0) THEN excluded.mcp ELSE devices.mcp END,
	system_info = CASE WHEN coalesce(excluded.last_seen, 0) > coalesce(devices.last_seen, 0) AND excluded.system_info IS NOT NULL OR devices.system_info IS NULL
		THEN excluded.system_info ELSE devices.system_info END,
	first_seen = CASE WHEN devices.first_seen IS NULL OR excluded.first_seen < devices.first_seen
		THEN excluded.first_seen ELSE devices.first_seen END,
	last_seen = max(coalesce(devices.last_seen, excluded.last_seen), coalesce(excluded.last_seen, devices.last_seen)),
	tools_hash = CASE WHEN devices.tools_hash IS NULL OR coalesce(excluded.tools_saved, 0) > coalesce(devices.tools_saved, 0)
		AND excluded.tools_hash IS NOT NULL THEN excluded.tools_hash ELSE devices.tools_hash END,
	tools_saved = CASE WHEN devices.tools_hash IS NULL OR coalesce(excluded.tools_saved, 0) > coalesce(devices.tools_saved, 0)
		AND excluded.tools_hash IS NOT NULL THEN excluded.tools_saved ELSE devices.tools_saved END;

INSERT INTO things (device_id, name, descriptor, state, state_updated)
	SELECT lower(device_id), name, descriptor, state, state_updated
	FROM things WHERE device_id IN (SELECT old FROM case_ids) ORDER BY coalesce(state_updated, 0)
ON CONFLICT (device_id, name) DO UPDATE SET descriptor = excluded.descriptor, state = excluded.state,
	state_updated = excluded.state_updated
	WHERE coalesce(excluded.state_updated, 0) > coalesce(things.state_updated, 0);

DELETE FROM things WHERE device_id IN (SELECT old FROM case_ids);
DELETE FROM devices WHERE id IN (SELECT old FROM case_ids);
DELETE FROM tool_sets WHERE hash NOT IN (SELECT tools_hash FROM devices WHERE tools_hash IS NOT NULL);

-- Trust: the lower-case record's decision (approval, generation,
-- revocation) stands where it has one; what is missing is taken from the
-- other; the last OTA check is the newer one.
INSERT INTO device_trust (device_id, client_id, generation, approved, revoked, activation_version,
		serial_number, activation_hmac, board, firmware, system_info, last_check)
	SELECT lower(device_id), client_id, generation, approved, revoked, activation_version,
		serial_number, activation_hmac, board, firmware, system_info, last_check
	FROM device_trust WHERE device_id IN (SELECT old FROM case_ids) ORDER BY coalesce(last_check, 0), device_id
ON CONFLICT (device_id) DO UPDATE SET
	approved = CASE WHEN device_trust.approved IS NULL AND device_trust.revoked IS NULL
		THEN excluded.approved ELSE device_trust.approved END,
	generation = CASE WHEN device_trust.approved IS NULL AND device_trust.revoked IS NULL
		THEN excluded.generation ELSE device_trust.generation END,
	revoked = CASE WHEN device_trust.revoked IS NULL THEN excluded.revoked ELSE device_trust.revoked END,
	activation_version = max(device_trust.activation_version, excluded.activation_version),
	serial_number = CASE WHEN device_trust.serial_number = '' THEN excluded.serial_number ELSE device_trust.serial_number END,
	activation_hmac = CASE WHEN device_trust.activation_hmac = '' THEN excluded.activation_hmac ELSE device_trust.activation_hmac END,
	client_id = CASE WHEN device_trust.client_id = '' THEN excluded.client_id ELSE device_trust.client_id END,
	board = CASE WHEN coalesce(excluded.last_check, 0) > coalesce(device_trust.last_check, 0) THEN excluded.board ELSE device_trust.board END,
	firmware = CASE WHEN coalesce(excluded.last_check, 0) > coalesce(device_trust.last_check, 0) THEN excluded.firmware ELSE device_trust.firmware END,
	system_info = CASE WHEN device_trust.system_info IS NULL OR coalesce(excluded.last_check, 0) > coalesce(device_trust.last_check, 0)
		AND excluded.system_info IS NOT NULL THEN excluded.system_info ELSE device_trust.system_info END,
	last_check = max(coalesce(device_trust.last_check, excluded.last_check), coalesce(excluded.last_check, device_trust.last_check));

DELETE FROM device_trust WHERE device_id IN (SELECT old FROM case_ids);

UPDATE calls SET device_id = lower(device_id) WHERE ((device_id GLOB '[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]' OR device_id GLOB '[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]') AND device_id <> lower(device_id));
UPDATE events SET device_id = lower(device_id) WHERE ((device_id GLOB '[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]:[0-9A-Fa-f][0-9A-Fa-f]' OR device_id GLOB '[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]-[0-9A-Fa-f][0-9A-Fa-f]') AND device_id <> lower(device_id));

DROP TABLE case_ids;
